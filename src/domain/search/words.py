"""Words as search sees them: runs of letters and digits, case-folded, without accents, so that
both databases match exactly the same way (the index and the query are folded here)."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterator


def _combining_marks() -> dict[int, None]:
    """A str.translate table deleting every combining mark (Unicode categories Mn, Mc, Me)."""
    return {c: None for c in range(0x300, sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("M")}


# str.translate is linear and fast; a regular expression over the ~2,400 marks costs 1.4 s per MiB.
_MARKS = _combining_marks()
# U+0345 COMBINING GREEK YPOGEGRAMMENI case-folds to the letter iota, so it stays until folded.
_MARKS_BEFORE_FOLDING = {c: None for c in _MARKS if c != 0x345}
_WORD = re.compile(r"[^\W_]+")
MAX_WORD_LENGTH = 100  # longer runs (hashes, base64 blobs) are indexed by their first 100 characters


def _mark_ranges() -> str:
    """The combining marks as a regular expression class body of ranges."""
    ranges: list[str] = []
    marks = sorted(_MARKS)
    start = previous = marks[0]
    for mark in [*marks[1:], -1]:
        if mark != previous + 1:
            ranges.append(f"\\U{start:08x}-\\U{previous:08x}")
            start = mark
        previous = mark
    return "".join(ranges)


# A word of a text as written: letters and digits with any marks among them (the marks vanish
# when folded: "cafe\u0301s" is one word, as split_words makes it).
_WRITTEN = re.compile(f"[^\\W_](?:[^\\W_]|[{_mark_ranges()}])*")
_WRITTEN_ASCII = re.compile("[A-Za-z0-9]+")  # the same words in ASCII text, found three times as fast


def fold(value: str) -> str:
    """The text case-folded, decomposed and without combining marks, recomposed (NFC)."""
    # Marks already in the text go first: NFD puts each run of marks in canonical order with an
    # insertion sort, quadratic in the run, and a run can be the whole text. Decomposing what is
    # left yields only the few marks of each precomposed character.
    unmarked = value.translate(_MARKS_BEFORE_FOLDING)
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFD", unmarked).casefold()).translate(_MARKS)
    return unicodedata.normalize("NFC", folded)


def split_words(value: str) -> list[str]:
    """Split text into folded words (runs of letters and digits), so that matching ignores
    case and accents: case-folded, decomposed, combining marks removed."""
    return _WORD.findall(fold(value))


def written_words(value: str, limit: int) -> Iterator[tuple[int, int, list[str]]]:
    """Each word of the first ``limit`` characters of a text as written: its start and end
    (in characters) and the folded words it makes (usually one), for marking matches in it."""
    if value[:limit].isascii():  # each word folds to itself in lower case: nothing to normalize
        for found in _WRITTEN_ASCII.finditer(value, 0, limit):
            yield found.start(), found.end(), [found.group().lower()]
        return
    for found in _WRITTEN.finditer(value, 0, limit):
        words = split_words(found.group())
        if words:
            yield found.start(), found.end(), words
