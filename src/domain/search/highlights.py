"""Why a card matched: fragments of its fields with the words of the query marked by offsets
(never markup, so a client renders them safely).

Offsets count Unicode code points. A field is read up to SCANNED characters, and no further
than its third fragment; a page reads at most PAGE_BUDGET characters of its cards' fields (a
field past it shows none). The words read are compared with the query's in one pass
(cardvault.domain.search.occurrences), and the comparisons are budgeted: CARD_COMPARISONS a
card, PAGE_COMPARISONS a page; a field stops where its card's or page's run out, keeping the
fragments found before. A fragment is about WIDTH characters, cut at word boundaries, and starts
up to LEAD characters before its first match; up to three fragments a field."""

from __future__ import annotations

import bisect
from typing import Any

from cardvault.domain.search.occurrences import Allowance, Finder
from cardvault.domain.search.query import Query, Text
from cardvault.domain.search.words import fold, written_words

FIELDS = ("title", "content", "notes", "transcript", "fileText")
SCANNED = 65_536
PAGE_BUDGET = 2 * 1024 * 1024
WIDTH = 200
LEAD = 60
MAX_FRAGMENTS = 3
# About one comparison a word read: a card may read a full field of one-letter words (a field of
# prose, about 11,000 words, three times), and a page eight such cards; 262,144 comparisons
# cost about half a second of CPU (a full page, where comparing every word with every word of
# the query cost 10 s).
CARD_COMPARISONS = SCANNED // 2
PAGE_COMPARISONS = 8 * CARD_COMPARISONS


def fragments(value: str, texts: list[Text], allowance: Allowance | None = None) -> list[dict[str, Any]]:
    """Up to three fragments of the field around the texts' occurrences, read word by word
    until the third fragment is whole, or until the allowance is spent (what it found stays)."""
    allowance = allowance or Allowance(CARD_COMPARISONS)
    scanned = value[:SCANNED]
    folded = fold(scanned)
    if not any(found.words[0] in folded for found in texts):
        return []  # none of the words is in it: no need to read it word by word
    finder = Finder(texts)
    reader = finder.reader()
    longest = max(finder.length(bit) for bit in range(len(finder.texts)))
    words: list[tuple[int, int]] = []  # each folded word read: where its written word stands
    reading = iter(written_words(scanned, SCANNED))
    result: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the fragment being filled
    at, ended = 0, False
    while len(result) < MAX_FRAGMENTS or current is not None:
        while len(words) < at + longest and not ended:  # the words a phrase starting here needs
            step = next(reading, None) if allowance.left > 0 else None
            if step is None:
                ended = True
                break
            start, end, folded_words = step
            for word in folded_words:
                words.append((start, end))
                reader.feed(word, allowance)
        if at >= len(words) or (allowance.left <= 0 and len(words) < at + longest):
            break  # past the words read (a text starting here may need the words left unread)
        bit = reader.starts.pop(at, None)
        if bit is not None:
            span = (words[at][0], words[at + finder.length(bit) - 1][1])
            if current is not None and span[1] <= current["limit"]:
                current["spans"].append(span)
            elif len(result) + (current is not None) < MAX_FRAGMENTS:
                if current is not None:
                    result.append(_close(scanned, words, current))
                first = 0 if span[0] <= LEAD else _word_start(words, span[0] - LEAD)
                current = {"start": first, "limit": max(first + WIDTH, span[1]), "spans": [span]}
            else:
                break
        elif current is not None and words[at][0] > current["limit"]:
            result.append(_close(scanned, words, current))
            current = None
        at += 1
    if current is not None:
        result.append(_close(scanned, words, current))
    return result[:MAX_FRAGMENTS]


def _word_start(words: list[tuple[int, int]], position: int) -> int:
    """The start of the first word read that starts at or after ``position``."""
    starts = [start for start, _ in words]
    return words[bisect.bisect_left(starts, position)][0]


def _close(value: str, words: list[tuple[int, int]], fragment: dict[str, Any]) -> dict[str, Any]:
    """The fragment's text, cut after the last word that ends within its width (the rest of the
    field when it fits), with its matches' offsets."""
    start, limit, found = fragment["start"], fragment["limit"], fragment["spans"]
    if len(value) <= limit:
        end = len(value)
    else:
        inside = [end for first, end in words if start <= first and end <= limit]
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
        "fileText": card.file_text,
    }


class Budget:
    """What is left of a page's PAGE_BUDGET characters to read, and its PAGE_COMPARISONS."""

    def __init__(self, characters: int = PAGE_BUDGET, comparisons: int = PAGE_COMPARISONS) -> None:
        self.left = characters
        self.comparisons = Allowance(comparisons)


def highlights(
    fields: dict[str, str | None], query: Query, budget: Budget | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each of FIELDS with its fragments (none where the query's words do not occur, or once
    the page's budget is spent)."""
    texts = [text for group in query.required for text in group]
    budget = budget or Budget()
    card = Allowance(min(CARD_COMPARISONS, budget.comparisons.left))
    result: dict[str, list[dict[str, Any]]] = {}
    for name in FIELDS:
        value = fields.get(name) or ""
        cost = min(len(value), SCANNED)
        readable = texts and value and cost <= budget.left and card.left > 0
        result[name] = fragments(value, texts, card) if readable else []
        budget.left -= cost
    budget.comparisons.left -= card.spent
    return result
