"""Full-text search: SQLite FTS5 or a PostgreSQL tsvector with a GIN index, fed with words
split and folded here so that both databases match exactly the same way."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable

from sqlalchemy import BigInteger, ColumnElement, String, and_, bindparam, column, text
from sqlalchemy.orm import Session

from cardvault.domain.models import Card


def _combining_marks() -> dict[int, None]:
    """A str.translate table deleting every combining mark (Unicode categories Mn, Mc, Me)."""
    return {c: None for c in range(0x300, sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("M")}


# str.translate is linear and fast; a regular expression over the ~2,400 marks costs 1.4 s per MiB.
_MARKS = _combining_marks()
# U+0345 COMBINING GREEK YPOGEGRAMMENI case-folds to the letter iota, so it stays until folded.
_MARKS_BEFORE_FOLDING = {c: None for c in _MARKS if c != 0x345}
_WORD = re.compile(r"[^\W_]+")
MAX_WORD_LENGTH = 100  # longer runs (hashes, base64 blobs) are indexed by their first 100 characters
MAX_QUERY_WORDS = 16
_INDEX_BUDGET = 900_000  # bytes of tsvector entries; PostgreSQL caps one tsvector at 1 MB


def split_words(value: str) -> list[str]:
    """Split text into folded words (runs of letters and digits), so that matching ignores
    case and accents: case-folded, decomposed, combining marks removed."""
    # Marks already in the text go first: NFD puts each run of marks in canonical order with an
    # insertion sort, quadratic in the run, and a run can be the whole text. Decomposing what is
    # left yields only the few marks of each precomposed character.
    unmarked = value.translate(_MARKS_BEFORE_FOLDING)
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFD", unmarked).casefold()).translate(_MARKS)
    return _WORD.findall(unicodedata.normalize("NFC", folded))


def index_words(texts: Iterable[str | None]) -> list[str]:
    """Return the distinct words of the texts that go into the index, within its budget."""
    words: dict[str, None] = {}
    budget = _INDEX_BUDGET
    for value in texts:
        for whole in split_words(value or ""):
            word = whole[:MAX_WORD_LENGTH]
            if word in words:
                continue
            budget -= len(word.encode()) + 4
            if budget < 0:
                return list(words)
            words[word] = None
    return list(words)


def query_words(q: str) -> list[str]:
    """Return the words of a search query that take part in matching: the first 16, without
    repeats and without a word that begins another one (``c`` adds nothing to ``cat``: every
    card matching ``cat`` matches ``c``), so redundant words never add work."""
    words = list(dict.fromkeys(word[:MAX_WORD_LENGTH] for word in split_words(q)[:MAX_QUERY_WORDS]))
    return [w for w in words if not any(o != w and o.startswith(w) for o in words)]


def card_words(card: Card) -> list[str]:
    """Return the words of a card's texts that go into the full-text index (tags do not: each
    tag row carries its own words, see tag_words)."""
    return index_words(
        [
            card.content,
            card.notes,
            card.url,
            card.metadata_title,
            card.metadata_description,
            card.ai_summary,
            card.ai_transcript,
        ]
    )


def tag_words(name: str) -> str:
    """Return a tag's words as stored on its row: folded, space-delimited at both ends."""
    return " " + " ".join(split_words(name)) + " "


def index_card(session: Session, card: Card) -> None:
    """Write the card's words into the full-text index, replacing what was there."""
    words = card_words(card)
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text("DELETE FROM card_search WHERE rowid = :pk"), {"pk": card.pk})
        session.execute(
            text("INSERT INTO card_search (rowid, words) VALUES (:pk, :words)"),
            {"pk": card.pk, "words": " ".join(words)},
        )
    else:
        session.execute(
            text(
                "INSERT INTO card_search (card_pk, part, tag_key, words) "
                "VALUES (:pk, 0, '', array_to_tsvector(CAST(:words AS text[]))) "
                "ON CONFLICT (card_pk, part, tag_key) DO UPDATE SET words = EXCLUDED.words"
            ),
            {"pk": card.pk, "words": words},
        )


def _prefix_query(dialect: str, word: str) -> str:
    """The full-text query for words beginning with this one (words hold no operators)."""
    return f'"{word}"*' if dialect == "sqlite" else f"'{word}':*"


# The card pks whose texts or tags have a word beginning with :fts. PostgreSQL keeps both in
# card_search (part 0: texts; 1 and 2: one row per tag row; migration 0004), so that one table
# answers and its statistics let the planner choose between driving from the index (a rare
# word) and probing cards in list order (a common one). SQLite keeps each card's tag words in
# card_tag_search.
_INDEXES = {
    "sqlite": (
        "SELECT rowid AS card_pk FROM card_search WHERE card_search MATCH :fts "
        "UNION ALL SELECT rowid AS card_pk FROM card_tag_search WHERE card_tag_search MATCH :fts"
    ),
    "postgresql": "SELECT card_pk FROM card_search WHERE words @@ CAST(:fts AS tsquery)",
}


def _match(dialect: str, name: str) -> ColumnElement[bool]:
    """Cards with a word beginning with the word bound to ``name`` in their texts, tags or AI tags."""
    found = text(_INDEXES[dialect].replace(":fts", f":{name}")).bindparams(bindparam(name, type_=String))
    return Card.pk.in_(found.columns(column("card_pk", BigInteger)))


def matches(dialect: str, count: int) -> ColumnElement[bool]:
    """Return a condition on Card: each of ``count`` words, bound by match_parameters, begins
    some word of the card's texts or tags."""
    return and_(*(_match(dialect, f"word{i}") for i in range(count)))


def match_parameters(dialect: str, words: list[str]) -> dict[str, str]:
    """The values of the parameters that ``matches`` binds, for these query words."""
    return {f"word{i}": _prefix_query(dialect, word) for i, word in enumerate(words)}
