"""Writing a card's words into the full-text index, with their positions (for phrases) and in
two classes: the headline (title, notes and its annotations' quotes and notes, beside the
tags, which their own rows carry; a text or quote card's first line is its title) and the
body (content, url, description, AI summary, transcript, the words read in its picture), which
relevance tells apart.

PostgreSQL: ``card_search`` rows of a card: part 0 its body, part 3 its headline, each a
tsvector of positions made here; parts 1 and 2 are its tags' and AI tags' rows, kept by
triggers on card_tags (migration 0004, with positions since 0025). SQLite: one FTS5 row per
card with the columns ``headline`` and ``body``, and the tags' words in ``card_tag_search``.

Texts of one class follow each other with a gap (PostgreSQL: a position left out; SQLite: a
token no query can hold), so a phrase never runs from one text into the next."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from cardvault.domain.models import Annotation, Card
from cardvault.domain.search import vocabulary
from cardvault.domain.search.words import MAX_WORD_LENGTH, split_words

BODY, TAGS, AI_TAGS, HEADLINE = 0, 1, 2, 3  # card_search.part on PostgreSQL
# A private-use character: a token to FTS5's unicode61 tokenizer, never in a folded word.
GAP = "\ue000"
_INDEX_BUDGET = 900_000  # bytes of a tsvector; PostgreSQL caps one at 1 MB
MAX_POSITION = 16_383  # PostgreSQL's last position: later words all stand there
_MAX_POSITIONS = 256  # positions PostgreSQL keeps per word


FIRST_LINE = 200  # characters of a text or quote card's first line that stand as its title


def title_of(card_type: str, title: str | None, content: str | None) -> str | None:
    """The title search knows a card by: its page's title, or for a text or quote card without
    one, its first line (up to FIRST_LINE characters, cut between words), as note apps do."""
    if title or card_type not in ("text", "quote") or not content:
        return title
    end = content.find("\n", 0, FIRST_LINE + 1)
    if end >= 0:
        return content[:end]
    if len(content) <= FIRST_LINE:
        return content
    cut = content.rfind(" ", 0, FIRST_LINE + 1)
    return content[: cut if cut > 0 else FIRST_LINE]


def headline_texts(card: Card) -> list[str | None]:
    return [title_of(card.type, card.metadata_title, card.content), card.notes]


def annotation_texts(session: Session, card: Card) -> list[str | None]:
    """The quotes and notes of the card's annotations, which search finds as it finds notes."""
    if not card.annotation_count:
        return []
    rows = session.execute(
        select(Annotation.quote, Annotation.note).where(Annotation.card_pk == card.pk).order_by(Annotation.pk)
    )
    return [value for row in rows for value in row if value]


def body_texts(card: Card) -> list[str | None]:
    return [
        card.content,
        card.url,
        card.metadata_description,
        card.ai_summary,
        card.ai_transcript,
        card.file_text,
    ]


def word_runs(texts: Iterable[str | None]) -> list[list[str]]:
    """Each text's words in order, each cut to MAX_WORD_LENGTH."""
    return [[word[:MAX_WORD_LENGTH] for word in split_words(value or "")] for value in texts]


def tsvector(runs: list[list[str]]) -> str | None:
    """A tsvector's text with each word's positions, the texts a position apart, within the
    index's budget (PostgreSQL holds no more: words past it are left out); None for no word."""
    return _vector_text(_positions(runs))


def _vector_text(positions: dict[str, list[int]]) -> str | None:
    if not positions:
        return None
    return " ".join(f"'{word}':{','.join(map(str, kept))}" for word, kept in positions.items())


def _positions(runs: list[list[str]]) -> dict[str, list[int]]:
    """Each word's positions, as far as the index's budget goes."""
    positions: dict[str, list[int]] = {}
    budget = _INDEX_BUDGET
    at = 0
    for run in runs:
        for word in run:
            at = min(at + 1, MAX_POSITION)
            kept = positions.get(word)
            if kept is None:
                budget -= len(word.encode()) + 8  # its entry, its count and a position
                if budget < 0:
                    break
                positions[word] = [at]
            elif len(kept) < _MAX_POSITIONS and kept[-1] != at:
                budget -= 2
                kept.append(at)
        at += 1  # the gap
    return positions


def fts_text(runs: list[list[str]]) -> str:
    """An FTS5 column's text: the words in order, the texts apart by GAP."""
    return f" {GAP} ".join(" ".join(run) for run in runs if run)


def index_card(session: Session, card: Card) -> None:
    """Write the card's words into the full-text index, replacing what was there, and count
    the words that came and went into the account's vocabulary (cardvault.domain.search.vocabulary)
    and their number into ``card.search_words``."""
    index_cards(session, [card])


_SQLITE_STATEMENTS = (
    "DELETE FROM card_search WHERE rowid = :pk",
    "INSERT INTO card_search (rowid, headline, body) VALUES (:pk, :headline, :body)",
    "UPDATE cards SET search_words = :n WHERE pk = :pk",
)
# The card's count goes with its first statement (the ORM would flush it in one more).
_COUNTED = "WITH counted AS (UPDATE cards SET search_words = :n WHERE pk = :pk) "
_GONE = "DELETE FROM card_search WHERE card_pk = :pk AND part = :part AND tag_key = ''"
_PUT = (
    "INSERT INTO card_search (card_pk, part, tag_key, words) "
    "VALUES (:pk, :part, '', CAST(:words AS tsvector)) "
    "ON CONFLICT (card_pk, part, tag_key) DO UPDATE SET words = EXCLUDED.words"
)


def index_cards(session: Session, cards: Sequence[Card]) -> None:
    """``index_card`` for several cards at once: one read of the words they had, and each kind
    of statement sent once for all of them (as one batch of parameters)."""
    cards = list(dict.fromkeys(cards))  # each once: the words it had are read once
    before_all = indexed_words(session, [card.pk for card in cards if card.search_words])
    sqlite = session.get_bind().dialect.name == "sqlite"
    batches: dict[str, list[dict[str, object]]] = {}
    for card in cards:
        headline = word_runs([*headline_texts(card), *annotation_texts(session, card)])
        body = word_runs(body_texts(card))
        before = before_all.get(card.pk, set())
        pk: dict[str, object] = {"pk": card.pk}
        if sqlite:
            after = {word for run in (*headline, *body) for word in run}
            delete_, insert, count = _SQLITE_STATEMENTS
            batches.setdefault(delete_, []).append(pk)
            batches.setdefault(insert, []).append(
                {**pk, "headline": fts_text(headline), "body": fts_text(body)}
            )
            if len(after) != card.search_words:
                batches.setdefault(count, []).append({**pk, "n": len(after)})
        else:
            parts = ((BODY, _positions(body)), (HEADLINE, _positions(headline)))
            after = {word for _, positions in parts for word in positions}
            counted = _COUNTED if len(after) != card.search_words else ""
            for part, positions in parts:
                words = _vector_text(positions)
                statement = counted + (_GONE if words is None else _PUT)
                values: dict[str, object] = {**pk, "part": part, "n": len(after)}
                batches.setdefault(statement, []).append(
                    values if words is None else {**values, "words": words}
                )
                counted = ""
        set_committed_value(card, "search_words", len(after))
        vocabulary.count(
            session,
            account_id=card.account_id,
            added=after - before,
            removed=before - after,
            language=vocabulary.card_language(card.ai_engine),
        )
    for statement, rows in batches.items():
        session.execute(text(statement), rows)


def indexed_words(session: Session, pks: Sequence[int]) -> dict[int, set[str]]:
    """The words of the cards' headlines and bodies in the full-text index, by card pk."""
    if not pks:
        return {}
    if session.get_bind().dialect.name == "sqlite":
        found: dict[int, set[str]] = {}
        rows = session.execute(
            text("SELECT rowid, headline, body FROM card_search WHERE rowid IN :pks").bindparams(
                bindparam("pks", expanding=True)
            ),
            {"pks": list(pks)},
        )
        for pk, *texts in rows:
            found[pk] = {word for value in texts if value for word in value.split() if word != GAP}
        return found
    # A row a card, its words in an array (not a row a word).
    rows = session.execute(
        text(
            "SELECT s.card_pk, array_agg(DISTINCT w) "
            "FROM card_search s, unnest(tsvector_to_array(s.words)) AS w "
            "WHERE s.card_pk = ANY(CAST(:pks AS bigint[])) AND s.part IN (0, 3) AND s.tag_key = '' "
            "GROUP BY s.card_pk"
        ),
        {"pks": list(pks)},
    )
    return {pk: set(words) for pk, words in rows}


def unindex_cards(session: Session, cards: Iterable[tuple[int, str]]) -> None:
    """Before cards (pk, account_id) are deleted for good: their words leave the vocabulary."""
    accounts = dict(cards)
    for pk, words in indexed_words(session, list(accounts)).items():
        vocabulary.count(session, account_id=accounts[pk], removed=words)


def tag_words(name: str) -> str:
    """Return a tag's words as stored on its row: folded, space-delimited at both ends."""
    return " " + " ".join(split_words(name)) + " "
