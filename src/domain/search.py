"""Full-text search: SQLite FTS5 or a PostgreSQL tsvector with a GIN index, fed with words
split and folded here so that both databases match exactly the same way."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from cardvault.domain.models import Card
from sqlalchemy import BigInteger, ColumnElement, bindparam, column, text
from sqlalchemy.orm import Session

_WORD = re.compile(r"[^\W_]+")
MAX_WORD_LENGTH = 100  # longer runs (hashes, base64 blobs) are not indexed
MAX_QUERY_WORDS = 16
_INDEX_BUDGET = 600_000  # bytes of distinct words; keeps a tsvector well under its 1 MB cap


def split_words(value: str) -> list[str]:
    """Split text into folded words: runs of letters and digits, compared ignoring case."""
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFD", value).casefold())
    return _WORD.findall(folded)


def index_words(texts: Iterable[str | None]) -> list[str]:
    """Return the distinct words of the texts that go into the index, within its budget."""
    words: dict[str, None] = {}
    budget = _INDEX_BUDGET
    for value in texts:
        for word in split_words(value or ""):
            if len(word) > MAX_WORD_LENGTH or word in words:
                continue
            budget -= len(word.encode()) + 8
            if budget < 0:
                return list(words)
            words[word] = None
    return list(words)


def query_words(q: str) -> list[str]:
    """Return the words of a search query that take part in matching."""
    return split_words(q)[:MAX_QUERY_WORDS]


def card_words(card: Card) -> list[str]:
    """Return the indexed words of a card."""
    return index_words(
        [
            card.content,
            card.notes,
            card.url,
            card.metadata_title,
            card.metadata_description,
            *card.tags,
            *card.ai_tags,
            card.ai_summary,
            card.ai_transcript,
        ]
    )


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


def matches(dialect: str, words: list[str]) -> ColumnElement[bool]:
    """Return a condition on Card: every word begins some indexed word of the card."""
    if dialect == "sqlite":
        expression = " AND ".join(f'"{word}"*' for word in words)
        subquery = text("SELECT rowid FROM card_search WHERE card_search MATCH :fts").bindparams(
            bindparam("fts", expression)
        )
    else:
        expression = " & ".join(f"'{word}':*" for word in words)
        subquery = text("SELECT card_pk FROM card_search WHERE words @@ CAST(:fts AS tsquery)").bindparams(
            bindparam("fts", expression)
        )
    return Card.pk.in_(subquery.columns(column("card_pk", BigInteger)))
