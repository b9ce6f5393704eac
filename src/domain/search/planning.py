"""What a search asks of the index once the account's words are known: which of q's terms must
match, the other forms of its words (a stem's, a typo's) each term may match as, and how much
each term tells (its weight, from how many cards hold it).

Stop words (cardvault.domain.search.stopwords) never decide a match: a term that is one stop
word is left out, unless every term is one. Quoted phrases must always match (``strict``); the
other terms may be dropped when too few cards hold them all (cardvault.domain.cards.ranking).
A term's weight is Okapi BM25's inverse document frequency over the account's cards."""

from __future__ import annotations

import dataclasses
import math

from sqlalchemy import text
from sqlalchemy.orm import Session

from cardvault.domain.search import vocabulary
from cardvault.domain.search.query import Query, Text
from cardvault.domain.search.stopwords import STOP_WORDS

MAX_TYPO_WORDS = 16  # words of a query for which typo fixes are sought (the first ones typed)
BEGINNINGS = 64  # words of the vocabulary a beginning is counted over (a word's holding, at most)
_CARDS_HELD = text("SELECT cards_held FROM accounts WHERE id = :id")
# How many cards hold words beginning with each word (summed over the first BEGINNINGS such
# words of the vocabulary, in its index order): a term found as a beginning tells that little.
_PG_BEGUN = text(f"""
SELECT begun.word, (
    SELECT COALESCE(SUM(cards), 0) FROM (
        SELECT cards FROM search_words
        WHERE account_id = :account AND word >= begun.word AND word < begun.word || chr(1114111)
        ORDER BY word LIMIT {BEGINNINGS}
    ) AS words
) FROM unnest(CAST(:words AS text[])) AS begun(word)
""")
_SQLITE_BEGUN = text(f"""
SELECT COALESCE(SUM(cards), 0) FROM (
    SELECT cards FROM search_words
    WHERE account_id = :account AND word >= :word AND word < :word || char(1114111)
    ORDER BY word LIMIT {BEGINNINGS}
)
""")


def _begun(session: Session, account_id: str, words: list[str]) -> dict[str, int]:
    """How many cards hold words beginning with each of ``words`` (an estimate, see _PG_BEGUN)."""
    if not words:
        return {}
    if session.get_bind().dialect.name == "postgresql":
        rows = session.execute(_PG_BEGUN, {"account": account_id, "words": words})
        return {word: int(cards) for word, cards in rows}
    return {
        word: int(session.execute(_SQLITE_BEGUN, {"account": account_id, "word": word}).scalar() or 0)
        for word in words
    }


@dataclasses.dataclass(frozen=True)
class Term:
    """One term to find: its texts as typed, then the other forms of its words."""

    texts: tuple[Text, ...]
    cards: int  # how many cards hold it as a whole word (as typed or another form), as far as known
    weight: float  # BM25's inverse document frequency of it as a whole word
    begun_weight: float  # the same of the words it begins (for a card holding only those)
    strict: bool  # a quoted phrase: every match holds it


@dataclasses.dataclass(frozen=True)
class Plan:
    """``query`` holds the terms that decide, in q's order, each with its forms; ``terms`` says
    more of each (aligned with ``query.required``); ``cards`` is how many cards the account
    holds (BM25's N)."""

    query: Query
    terms: tuple[Term, ...]
    cards: int
    stop_words_only: bool = False  # every term is a stop word: each must match

    @property
    def droppable(self) -> tuple[int, ...]:
        """The terms a card may lack (not phrases), when there are terms it must hold."""
        if self.stop_words_only or len(self.terms) < 2:
            return ()
        return tuple(i for i, term in enumerate(self.terms) if not term.strict)


def _stop(group: tuple[Text, ...]) -> bool:
    return all(found.prefix and len(found.words) == 1 and found.words[0] in STOP_WORDS for found in group)


def _single(found: Text) -> str | None:
    """The word of a text that can have other forms: one word, not a quoted phrase."""
    return found.words[0] if len(found.words) == 1 and not found.phrase else None


def _each_once(texts: list[Text]) -> tuple[Text, ...]:
    """The texts without a repeat of the same words (the first one kept: as typed, a stem's)."""
    first: dict[tuple[tuple[str, ...], bool], Text] = {}
    for found in texts:
        first.setdefault((found.words, found.prefix), found)
    return tuple(first.values())


def weight(cards: int, holding: int) -> float:
    """BM25's inverse document frequency of a term ``holding`` of ``cards`` cards hold."""
    holding = max(1, min(holding, cards))
    return math.log(1 + (cards - holding + 0.5) / (holding + 0.5))


def plan(session: Session, account_id: str, query: Query) -> Plan:
    """The plan of a query that has words to find (query.has_words)."""
    telling = [group for group in query.required if not _stop(group)]
    groups = telling or list(query.required)
    words = list(dict.fromkeys(word for group in groups for found in group if (word := _single(found))))
    loose = [w for group in groups if not any(f.phrase for f in group) for f in group if (w := _single(f))]
    typos = list(dict.fromkeys(loose))[:MAX_TYPO_WORDS]
    forms = vocabulary.forms(session, account_id, words, typos=typos)
    beginnings = [f.words[-1] for g in groups for f in g if f.prefix and f.words[-1] not in STOP_WORDS]
    begun = _begun(session, account_id, list(dict.fromkeys(beginnings)))
    held = session.execute(_CARDS_HELD, {"id": account_id}).scalar()
    cards = max(1, int(held or 0))
    required: list[tuple[Text, ...]] = []
    terms: list[Term] = []
    for group in groups:
        texts = list(group)
        holding = beginning = 0
        for found in group:
            word = _single(found)
            known = forms.get(word) if word is not None else None
            if found.prefix:  # the words it begins (itself among them)
                beginning += begun.get(found.words[-1], 0)
            if known is None:
                continue
            holding += known.cards
            for other, count in known.stems:
                texts.append(Text((other,), prefix=False, form="stem"))
                holding += count
            for other, count in known.typos:
                texts.append(Text((other,), prefix=False, form="typo"))
                holding += count
        kept = _each_once(texts)
        required.append(kept)
        strict = any(found.phrase for found in group)
        told, begun_told = weight(cards, holding), weight(cards, max(beginning, holding))
        terms.append(Term(kept, min(holding, cards), told, begun_told, strict))
    expanded = dataclasses.replace(query, required=tuple(required))
    return Plan(expanded, tuple(terms), cards, stop_words_only=not telling)
