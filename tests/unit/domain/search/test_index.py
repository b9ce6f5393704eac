"""What goes into the full-text index: words with positions, texts kept apart, the budget."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from cardvault.domain.db import Database
from cardvault.domain.search.index import (
    FIRST_LINE,
    GAP,
    MAX_POSITION,
    fts_text,
    title_of,
    tsvector,
    word_runs,
)


def test_positions_count_words_and_leave_a_gap_between_texts() -> None:
    runs = word_runs(["Cat sat", None, "cat"])
    assert runs == [["cat", "sat"], [], ["cat"]]
    assert tsvector(runs) == "'cat':1,5 'sat':2"
    assert fts_text(runs) == f"cat sat {GAP} cat"


def test_no_words_make_no_row() -> None:
    assert tsvector(word_runs(["", "!!", None])) is None


def test_positions_stop_at_postgresqls_last_and_a_vector_stays_within_its_budget() -> None:
    many = " ".join(f"w{i}" for i in range(MAX_POSITION + 10))
    vector = tsvector(word_runs([many]))
    assert vector is not None and vector.endswith(f"'w{MAX_POSITION + 9}':{MAX_POSITION}")
    huge = tsvector(word_runs([" ".join(f"{i:x}" * 12 for i in range(200_000))]))
    assert huge is not None and len(huge.encode()) < 1_000_000


def test_postgresql_reads_the_vector_as_written(database: Database) -> None:
    if database.dialect != "postgresql":
        pytest.skip("tsvector is PostgreSQL's")
    vector = tsvector(word_runs(["ünï code", "x"]))
    with database.transaction(write=False) as session:
        found = session.execute(
            text("SELECT v @@ CAST(:q AS tsquery), v @@ CAST(:n AS tsquery) FROM CAST(:v AS tsvector) v"),
            {"v": vector, "q": "'uni' <-> 'code'", "n": "'code' <-> 'x'"},
        ).one()
    assert tuple(found) == (True, False)  # side by side in one text; never across two


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


def test_a_text_or_quote_cards_first_line_is_its_title() -> None:
    assert title_of("text", None, "Heading\nthe body") == "Heading"
    assert title_of("quote", None, "Be here now.") == "Be here now."
    cut = title_of("text", None, "word " * 100)
    assert cut is not None and len(cut) <= FIRST_LINE and cut.endswith("word")
    assert title_of("link", None, "https://example.com/") is None
    assert title_of("text", "A page's title", "Heading\n") == "A page's title"
