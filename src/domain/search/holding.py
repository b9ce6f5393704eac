"""How a card holds each term of a plan, read from its own index text (SQLite: the words FTS5
keeps in ``card_search`` and ``card_tag_search``), by the same rules the index's queries follow
(cardvault.domain.search.matching): a word whole or as a beginning, a phrase's words side by
side, two texts near each other with at most matching.NEAR words between them, in either order.

One read of every candidate's text instead of a full-text query per term and candidate list,
which read each term's whole posting list: 52 such queries cost a ten-word question 0.47 s at
3,000 cards. At most TEXT_CHARACTERS of each column are read (as highlights read fields)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from cardvault.domain.search.matching import NEAR
from cardvault.domain.search.query import Text

TEXT_CHARACTERS = 65_536

_TEXTS = text(
    f"SELECT rowid, substr(headline, 1, {TEXT_CHARACTERS}), substr(body, 1, {TEXT_CHARACTERS}) "
    "FROM card_search WHERE rowid IN (SELECT value FROM json_each(:pks))"
)
_TAGS = text(
    f"SELECT rowid, substr(words, 1, {TEXT_CHARACTERS}) FROM card_tag_search "
    "WHERE rowid IN (SELECT value FROM json_each(:pks))"
)


@dataclasses.dataclass(frozen=True)
class Held:
    """How a card holds one term: anywhere, in its headline (or tags), as typed and whole, and
    whole as typed or another form."""

    anywhere: bool
    headline: bool
    typed: bool
    whole: bool


class _Column:
    """A column's tokens, with the positions of the words the terms ask for (``exact``) and of
    the words beginning with each beginning they ask for (``beginnings``)."""

    def __init__(
        self, value: str | None, exact: frozenset[str], beginnings: dict[int, frozenset[str]]
    ) -> None:
        self.tokens = (value or "").split()
        self.at: dict[str, list[int]] = {}
        self.begun: dict[str, list[int]] = {}
        for position, token in enumerate(self.tokens):
            if token in exact:
                self.at.setdefault(token, []).append(position)
            for length, begun in beginnings.items():
                if token[:length] in begun:
                    self.begun.setdefault(token[:length], []).append(position)
        self._spans: dict[tuple[int, bool], list[tuple[int, int]]] = {}  # by id(text): the plan's own

    def spans(self, found: Text, *, whole: bool = False) -> list[tuple[int, int]]:
        """Where the text occurs: (first, last) token positions; ``whole``: its last word too."""
        key = (id(found), whole)
        if key not in self._spans:
            self._spans[key] = self._find(found, found.prefix and not whole)
        return self._spans[key]

    def _find(self, found: Text, prefix: bool) -> list[tuple[int, int]]:
        first, *rest = found.words
        if not rest:
            return [(p, p) for p in (self.begun if prefix else self.at).get(first, ())]
        found_at = []
        for start in self.at.get(first, ()):
            end = start + len(rest)
            if end >= len(self.tokens):
                continue
            middle = all(self.tokens[start + k + 1] == word for k, word in enumerate(rest[:-1]))
            last = self.tokens[end]
            if middle and (last == rest[-1] or (prefix and last.startswith(rest[-1]))):
                found_at.append((start, end))
        return found_at


def _near(column: _Column, first: Text, second: Text) -> bool:
    a, b = column.spans(first), column.spans(second)
    return any(0 <= y0 - x1 - 1 <= NEAR or 0 <= x0 - y1 - 1 <= NEAR for x0, x1 in a for y0, y1 in b)


def holding(
    connection: Connection, terms: Sequence[Sequence[Text]], pks: list[int], pairs: int
) -> tuple[dict[int, list[Held]], dict[int, list[bool]]]:
    """Each card's Held of each term (its texts: as typed, then other forms), and whether each
    of the first ``pairs`` two neighbouring terms' first texts are near each other."""
    among = {"pks": json.dumps(pks)}
    texts = [found for term in terms for found in term]
    exact = frozenset(found.words[0] for found in texts)
    by_length: dict[int, set[str]] = {}
    for found in texts:
        if found.prefix and len(found.words) == 1:
            by_length.setdefault(len(found.words[0]), set()).add(found.words[0])
    beginnings = {length: frozenset(words) for length, words in by_length.items()}

    def column(value: str | None) -> _Column:
        return _Column(value, exact, beginnings)

    columns: dict[int, list[_Column]] = {pk: [] for pk in pks}
    tags: dict[int, _Column] = {}
    for pk, headline, body in connection.execute(_TEXTS, among):
        columns[pk] = [column(headline), column(body)]
    for pk, words in connection.execute(_TAGS, among):
        tags[pk] = column(words)
    held: dict[int, list[Held]] = {}
    near: dict[int, list[bool]] = {}
    for pk in pks:
        read = columns[pk] or [column(None), column(None)]
        head = [read[0], *([tags[pk]] if pk in tags else [])]
        every = [*read, *head[1:]]
        held[pk] = [
            Held(
                anywhere=any(c.spans(t) for t in texts for c in every),
                headline=any(c.spans(t) for t in texts for c in head),
                typed=any(c.spans(t, whole=True) for t in texts if t.form == "typed" for c in every),
                whole=any(c.spans(t, whole=True) for t in texts for c in every),
            )
            for texts in terms
        ]
        near[pk] = [
            any(_near(c, first[0], second[0]) for c in every)
            for first, second in itertools.islice(itertools.pairwise(terms), pairs)
        ]
    return held, near
