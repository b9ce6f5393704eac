"""Why a card matched: fragments of its fields with the words of the query marked by offsets
(never markup, so a client renders them safely).

Offsets count Unicode code points. A field is read up to SCANNED characters; a fragment is
about WIDTH characters, cut at word boundaries, and starts up to LEAD characters before its
first match; up to three fragments a field."""

from __future__ import annotations

import bisect
from typing import Any, NamedTuple

from cardvault.domain.search.query import Query, Text
from cardvault.domain.search.words import written_words

FIELDS = ("title", "content", "notes", "transcript")
SCANNED = 65_536
WIDTH = 200
LEAD = 60
MAX_FRAGMENTS = 3


class _Word(NamedTuple):
    start: int
    end: int
    folded: str


def _matches(found: Text, words: list[_Word], at: int) -> bool:
    last = len(found.words) - 1
    if at + last >= len(words):
        return False
    for offset, wanted in enumerate(found.words):
        word = words[at + offset].folded
        if not (word.startswith(wanted) if found.prefix and offset == last else word == wanted):
            return False
    return True


def spans(value: str, texts: list[Text]) -> tuple[list[_Word], list[tuple[int, int]]]:
    """The field's words (as written, folded) and where the texts occur in it, merged."""
    words = [
        _Word(start, end, folded)
        for start, end, folded_words in written_words(value, SCANNED)
        for folded in folded_words
    ]
    found: list[tuple[int, int]] = []
    for at in range(len(words)):
        for text in texts:
            if _matches(text, words, at):
                found.append((words[at].start, words[at + len(text.words) - 1].end))
    found.sort()
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return words, merged


def fragments(value: str, texts: list[Text]) -> list[dict[str, Any]]:
    """Up to three fragments of the field around the texts' occurrences."""
    words, found = spans(value, texts)
    starts = [word.start for word in words]
    result: list[dict[str, Any]] = []
    i = 0
    while i < len(found) and len(result) < MAX_FRAGMENTS:
        first = found[i][0]
        start = 0 if first <= LEAD else words[bisect.bisect_left(starts, first - LEAD)].start
        limit = start + WIDTH
        if len(value) <= limit:
            end = len(value)  # the rest of the field, whole
        else:
            last = bisect.bisect_right(starts, limit) - 1  # the last word starting in the window
            if words[last].end > limit:
                last -= 1
            end = max(words[last].end if last >= 0 else 0, found[i][1])
        marks = []
        while i < len(found) and found[i][1] <= end:
            marks.append({"start": found[i][0] - start, "end": found[i][1] - start})
            i += 1
        result.append({"text": value[start:end], "offset": start, "matches": marks})
    return result


def fields_of(card: Any) -> dict[str, str | None]:
    """The highlighted fields of a card (a Card or a listing's CardView)."""
    return {
        "title": card.metadata_title,
        "content": card.content,
        "notes": card.notes,
        "transcript": card.ai_transcript,
    }


def highlights(fields: dict[str, str | None], query: Query) -> dict[str, list[dict[str, Any]]]:
    """Each of FIELDS with its fragments (none where the query's words do not occur)."""
    texts = [text for group in query.required for text in group]
    return {name: fragments(fields.get(name) or "", texts) if texts else [] for name in FIELDS}
