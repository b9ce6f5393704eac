"""Finding a quote in a text (plain functions of values): exactly, then among its repeats by
the text around it, then by a fuzzy match tolerant of whitespace and small edits (RapidFuzz's
partial ratio). Positions are in code points, as Python's str indexes them."""

from __future__ import annotations

import re
from typing import NamedTuple

from rapidfuzz import fuzz

CONTEXT = 32  # characters of prefix and suffix kept on each side
FUZZY_SCORE = 90.0  # RapidFuzz's partial ratio (0 to 100) a near match needs
FUZZY_MIN = 8  # a shorter quote is only found exactly
# Past this size a fuzzy search reads only the window around where the quote was.
FUZZY_WHOLE_TEXT = 1 << 20
_WINDOW = 4096


class Anchor(NamedTuple):
    start: int
    end: int


def context(text: str, anchor: Anchor) -> tuple[str, str]:
    """The prefix and suffix of a placed quote: up to CONTEXT characters on each side."""
    return text[max(0, anchor.start - CONTEXT) : anchor.start], text[anchor.end : anchor.end + CONTEXT]


class Quoted(NamedTuple):
    """A quote to place again: its text, its context and where it was (None: nowhere yet)."""

    quote: str
    prefix: str | None
    suffix: str | None
    near: int | None


def find(
    text: str,
    quote: str,
    *,
    prefix: str | None = None,
    suffix: str | None = None,
    near: int | None = None,
    shift: int = 0,
) -> Anchor | None:
    """Where the quote is in the text, or None. Of several places, the one whose surroundings
    match ``prefix`` and ``suffix`` best, then the one nearest ``near`` (where it was), then the
    first. ``shift``: how far an edit moved the quotes before this one; where the quote is, with
    all its context, at ``near`` or ``near + shift``, that place is taken without a search (a
    place that keeps all its context is the best any search finds)."""
    prefix, suffix = prefix or "", suffix or ""
    if near is not None and (prefix or suffix):
        for start in (near, near + shift) if shift else (near,):
            end = start + len(quote)
            held = start >= 0 and text.startswith(quote, start)
            if held and _score(text, start, end, prefix, suffix) == len(prefix) + len(suffix):
                return Anchor(start, end)
    found = _exact(text, quote, prefix, suffix, near)
    if found is None:
        found = _spaced(text, quote, prefix, suffix, near)
    if found is None and len(quote) >= FUZZY_MIN:
        found = _fuzzy(text, quote, near)
    return found


def place_all(text: str, quoted: list[Quoted]) -> list[Anchor | None]:
    """Place quotes again in an edited text, each as ``find`` does, in the order given (the
    order they were in): an edit moves the quotes after it by one amount, which each found
    quote passes to the next, so that those the edit did not touch are placed in time
    proportional to their own length, not the text's."""
    placed: list[Anchor | None] = []
    shift = 0
    for quote, prefix, suffix, near in quoted:
        anchor = find(text, quote, prefix=prefix, suffix=suffix, near=near, shift=shift)
        if anchor is not None and near is not None:
            shift = anchor.start - near
        placed.append(anchor)
    return placed


def _score(text: str, start: int, end: int, prefix: str, suffix: str) -> int:
    """How many characters of prefix (at its end) and suffix (at its start) the text holds."""
    before, after = text[max(0, start - len(prefix)) : start], text[end : end + len(suffix)]
    matched = 0
    for a, b in zip(reversed(before), reversed(prefix), strict=False):
        if a != b:
            break
        matched += 1
    for a, b in zip(after, suffix, strict=False):
        if a != b:
            break
        matched += 1
    return matched


def _best(text: str, places: list[Anchor], prefix: str, suffix: str, near: int | None) -> Anchor | None:
    if not places:
        return None
    return max(
        places,
        key=lambda a: (
            _score(text, a.start, a.end, prefix, suffix),
            -abs(a.start - near) if near is not None else 0,
            -a.start,
        ),
    )


def _exact(text: str, quote: str, prefix: str, suffix: str, near: int | None) -> Anchor | None:
    places: list[Anchor] = []
    whole = len(prefix) + len(suffix)
    start = text.find(quote)
    while start >= 0:
        place = Anchor(start, start + len(quote))
        # A place whose surroundings match in full (and where it was, when known) is the one.
        matched = whole and _score(text, place.start, place.end, prefix, suffix) == whole
        if matched and (near is None or near == start):
            return place
        places.append(place)
        start = text.find(quote, start + 1)
    return _best(text, places, prefix, suffix, near)


def _spaced(text: str, quote: str, prefix: str, suffix: str, near: int | None) -> Anchor | None:
    """The quote with any run of whitespace standing for any other (a page read again, a
    highlight copied across lines)."""
    words = quote.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(map(re.escape, words)))
    places = [Anchor(m.start(), m.end()) for m in pattern.finditer(text)]
    return _best(text, places, prefix, suffix, near)


def _fuzzy(text: str, quote: str, near: int | None) -> Anchor | None:
    offset = 0
    if len(text) > FUZZY_WHOLE_TEXT:
        if near is None:
            return None
        offset = max(0, near - _WINDOW)
        text = text[offset : near + len(quote) + _WINDOW]
    found = fuzz.partial_ratio_alignment(quote, text, score_cutoff=FUZZY_SCORE)
    if found is None or found.dest_end <= found.dest_start:
        return None
    return Anchor(offset + found.dest_start, offset + found.dest_end)
