"""How text becomes search words, and which query words take part in matching."""

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from cardvault.domain.db import Database
from cardvault.domain.search import query_words, split_words


@pytest.mark.parametrize(
    ("q", "words"),
    [
        ("c c c c c c c c c c c c c c c c", ["c"]),
        ("Cat c CA cat", ["cat"]),
        ("cafe Café CAFÉ", ["cafe"]),
        ("dog cat do", ["dog", "cat"]),
        ("%_ ' OR 1=1 --", ["or", "1"]),
        ("", []),
    ],
)
def test_repeated_and_redundant_query_words_are_dropped(q: str, words: list[str]) -> None:
    assert query_words(q) == words


def test_only_the_first_sixteen_words_count() -> None:
    assert query_words(" ".join(f"w{i}x" for i in range(20))) == [f"w{i}x" for i in range(16)]


def test_every_combining_mark_is_folded_away() -> None:
    # (U+0345 is left out: case folding turns it into the letter iota first.)
    marks = [chr(c) for c in range(0x300, 0x110000) if unicodedata.category(chr(c)).startswith("M")]
    marks.remove("\u0345")
    assert split_words("a" + "".join(marks) + "b É") == ["ab", "e"]


def _words_by_the_book(value: str) -> list[str]:
    """The folding rule written plainly (quadratic on long runs of marks)."""
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFD", value).casefold())
    kept = "".join(c for c in decomposed if not unicodedata.category(c).startswith("M"))
    return re.findall(r"[^\W_]+", unicodedata.normalize("NFC", kept))


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_folding_matches_the_rule_as_written(value: str) -> None:
    assert split_words(value) == _words_by_the_book(value)


def test_a_long_run_of_marks_in_any_order_folds_to_nothing() -> None:
    marks = "".join(chr(0x300 + (i * 37) % 0x45) for i in range(200_000))  # U+0300..U+0344
    assert split_words("a" + marks + "b") == ["ab"]


def test_postgresql_sessions_run_without_jit_parallel_workers_or_generic_plans(database: Database) -> None:
    # JIT compiling cost a 16-word search 1.4 s of its 1.45 s, a parallel plan a tag filter 41 ms
    # of 3.2; our statements run in milliseconds.
    if database.dialect != "postgresql":
        pytest.skip("JIT and parallel plans are PostgreSQL's")
    for write in (False, True):
        with database.transaction(write=write) as session:
            assert session.execute(text("SHOW jit")).scalar() == "off"
            assert session.execute(text("SHOW max_parallel_workers_per_gather")).scalar() == "0"
            assert session.execute(text("SHOW plan_cache_mode")).scalar() == "force_custom_plan"


def test_postgresql_tag_search_triggers_plan_with_ssd_page_costs(database: Database) -> None:
    # With the default random_page_cost the triggers removed 2,000 changed tag rows by hashing
    # a scan of every search row: 77 ms of a 105 ms rename batch (31 ms with 1.1).
    if database.dialect != "postgresql":
        pytest.skip("the tag search triggers are PostgreSQL's")
    with database.transaction(write=False) as session:
        settings = dict(
            session.execute(
                text(
                    "SELECT proname, proconfig FROM pg_proc WHERE proname IN "
                    "('card_search_tags_delete', 'card_search_tags_update')"
                )
            ).all()
        )
    assert settings == {
        "card_search_tags_delete": ["random_page_cost=1.1"],
        "card_search_tags_update": ["random_page_cost=1.1"],
    }
