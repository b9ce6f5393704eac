"""How text becomes search words, and which query words take part in matching."""

import unicodedata

import pytest

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
