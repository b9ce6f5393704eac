"""Why a card matched: fragments of its fields with the words of the query marked by offsets
(never markup, so a client renders them safely).

Offsets count Unicode code points. A field is read up to SCANNED characters, and no further
than its third fragment; a page reads at most PAGE_BUDGET characters of its cards' fields (a
field past it shows none). A fragment is about WIDTH characters, cut at word boundaries, and
starts up to LEAD characters before its first match; up to three fragments a field."""

from __future__ import annotations

import bisect
from typing import Any, NamedTuple

from cardvault.domain.search.query import Query, Text
from cardvault.domain.search.words import MAX_WORD_LENGTH, fold, written_words

FIELDS = ("title", "content", "notes", "transcript")
SCANNED = 65_536
PAGE_BUDGET = 2 * 1024 * 1024
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
        word = words[at + offset].folded[:MAX_WORD_LENGTH]
        if not (word.startswith(wanted) if found.prefix and offset == last else word == wanted):
            return False
    return True


def fragments(value: str, texts: list[Text]) -> list[dict[str, Any]]:
    """Up to three fragments of the field around the texts' occurrences, read word by word
    until the third fragment is whole."""
    scanned = value[:SCANNED]
    folded = fold(scanned)
    if not any(found.words[0] in folded for found in texts):
        return []  # none of the words is in it: no need to read it word by word
    longest = max(len(found.words) for found in texts)
    words: list[_Word] = []
    reading = iter(written_words(scanned, SCANNED))
    result: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the fragment being filled
    at = 0
    while len(result) < MAX_FRAGMENTS or current is not None:
        while len(words) < at + longest:  # the words a phrase starting here needs
            step = next(reading, None)
            if step is None:
                break
            start, end, folded_words = step
            words.extend(_Word(start, end, word) for word in folded_words)
        if at >= len(words):
            break
        match = next((found for found in texts if _matches(found, words, at)), None)
        if match is not None:
            span = (words[at].start, words[at + len(match.words) - 1].end)
            if current is not None and span[1] <= current["limit"]:
                current["spans"].append(span)
            elif len(result) + (current is not None) < MAX_FRAGMENTS:
                if current is not None:
                    result.append(_close(scanned, words, current))
                first = 0 if span[0] <= LEAD else _word_start(words, span[0] - LEAD)
                current = {"start": first, "limit": max(first + WIDTH, span[1]), "spans": [span]}
            else:
                break
        elif current is not None and words[at].start > current["limit"]:
            result.append(_close(scanned, words, current))
            current = None
        at += 1
    if current is not None:
        result.append(_close(scanned, words, current))
    return result[:MAX_FRAGMENTS]


def _word_start(words: list[_Word], position: int) -> int:
    """The start of the first word read that starts at or after ``position``."""
    starts = [word.start for word in words]
    return words[bisect.bisect_left(starts, position)].start


def _close(value: str, words: list[_Word], fragment: dict[str, Any]) -> dict[str, Any]:
    """The fragment's text, cut after the last word that ends within its width (the rest of the
    field when it fits), with its matches' offsets."""
    start, limit, found = fragment["start"], fragment["limit"], fragment["spans"]
    if len(value) <= limit:
        end = len(value)
    else:
        inside = [word.end for word in words if start <= word.start and word.end <= limit]
        end = max([*inside, found[-1][1]])
    marks = [{"start": first - start, "end": last - start} for first, last in found if last <= end]
    return {"text": value[start:end], "offset": start, "matches": marks}


def fields_of(card: Any) -> dict[str, str | None]:
    """The highlighted fields of a card (a Card or a listing's CardView)."""
    return {
        "title": card.metadata_title,
        "content": card.content,
        "notes": card.notes,
        "transcript": card.ai_transcript,
    }


class Budget:
    """What is left of a page's PAGE_BUDGET characters to read."""

    def __init__(self, characters: int = PAGE_BUDGET) -> None:
        self.left = characters


def highlights(
    fields: dict[str, str | None], query: Query, budget: Budget | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each of FIELDS with its fragments (none where the query's words do not occur, or once
    the page's budget is spent)."""
    texts = [text for group in query.required for text in group]
    budget = budget or Budget()
    result: dict[str, list[dict[str, Any]]] = {}
    for name in FIELDS:
        value = fields.get(name) or ""
        cost = min(len(value), SCANNED)
        result[name] = fragments(value, texts) if texts and value and cost <= budget.left else []
        budget.left -= cost
    return result
