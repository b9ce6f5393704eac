"""Full-text search: SQLite FTS5 or a PostgreSQL tsvector with a GIN index, fed with words
split and folded here so that both databases match exactly the same way."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable

from sqlalchemy import BigInteger, ColumnElement, and_, bindparam, column, exists, or_, text
from sqlalchemy.orm import Session

from cardvault.domain.models import Card, CardTag


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
                "INSERT INTO card_search (card_pk, words) "
                "VALUES (:pk, array_to_tsvector(CAST(:words AS text[]))) "
                "ON CONFLICT (card_pk) DO UPDATE SET words = EXCLUDED.words"
            ),
            {"pk": card.pk, "words": words},
        )


def _text_match(dialect: str, word: str) -> ColumnElement[bool]:
    """Cards whose indexed texts have a word beginning with this one."""
    if dialect == "sqlite":
        subquery = text("SELECT rowid FROM card_search WHERE card_search MATCH :fts")
        expression = f'"{word}"*'
    else:
        subquery = text("SELECT card_pk FROM card_search WHERE words @@ CAST(:fts AS tsquery)")
        expression = f"'{word}':*"
    subquery = subquery.bindparams(bindparam("fts", expression, unique=True))
    return Card.pk.in_(subquery.columns(column("card_pk", BigInteger)))


def _tag_match(word: str) -> ColumnElement[bool]:
    """Cards with a tag or AI tag having a word beginning with this one."""
    # Words are letters and digits only, so they hold no LIKE wildcard.
    return exists().where(CardTag.card_pk == Card.pk, CardTag.words.like(f"% {word}%"))


def matches(dialect: str, words: list[str]) -> ColumnElement[bool]:
    """Return a condition on Card: each word begins some word of the card's texts or tags."""
    return and_(*(or_(_text_match(dialect, word), _tag_match(word)) for word in words))
