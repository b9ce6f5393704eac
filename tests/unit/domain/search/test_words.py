"""How text becomes search words, and where a text's words are as written."""

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.search.words import split_words, written_words


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


def test_written_words_are_found_where_they_stand_with_their_marks() -> None:
    value = "Cafe\u0301s, naïve_x ǅemal 42"
    assert list(written_words(value, len(value))) == [
        (0, 6, ["cafes"]),
        (8, 13, ["naive"]),
        (14, 15, ["x"]),
        (16, 21, ["ǆemal"]),
        (22, 24, ["42"]),
    ]
    assert list(written_words(value, 7)) == [(0, 6, ["cafes"])]
