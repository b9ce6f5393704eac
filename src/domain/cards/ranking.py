"""Ranking a search's matches by relevance when few cards hold every term: the order is made
here, from each card's own index rows, over a bounded window of candidates.

Buckets, each only breaking the ties of the one before (as Meilisearch's ranking rules):

1. cards holding every term (cardvault.domain.search.planning) before cards holding some;
2. among those holding every term, the tier (cardvault.domain.search.matching.TIERS): where the
   terms are found (all in the headline, some, none) and whether as typed whole words;
3. the score: Okapi BM25 over the terms a card holds, each term weighing by how rare it is in
   the account's cards; a term in the headline (title, notes, tags) counts as two and a half
   occurrences, one found only as another form (a stem's or a typo's word) as four fifths, only
   as the beginning of a word as two fifths (weighing as the words it begins); a card holds a
   term once or not (how often is not read); long cards (by their count of distinct words)
   weigh less; and each two neighbouring terms of q found near each other (within
   matching.NEAR words, in either order) add PROXIMITY of the lesser one's weight; for a q
   of terms a card may lack, the words related to them by the best cards of this ranking
   (cardvault.domain.search.feedback) add FEEDBACK of their own BM25 score;
4. newest first.

Cards holding some of the terms are read term by term, the rarest first, at most WINDOW cards
of each in index order (newest first) and CANDIDATES in all, so a page's cost is bounded
whatever matches; then up to RELATED_CANDIDATES cards holding a related word, in one read.
A quoted phrase is held by every candidate (it never drops)."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

from sqlalchemy import BigInteger, Select, any_, bindparam, column, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from cardvault.domain.cards.reading import CardView, view_query, views
from cardvault.domain.models import Card
from cardvault.domain.search import feedback, holding, matching
from cardvault.domain.search.planning import Plan, Term
from cardvault.domain.search.query import Text

FEW = 200  # a relevance listing with at most this many cards holding every term is ranked here
WINDOW = 50  # cards read of each term for cards holding some of the terms
CANDIDATES = 200  # cards holding some of the terms that are ranked, at most
READ_TERMS = 8  # terms whose cards are read for them, at most (the rarest)
K1, B = 1.2, 0.5  # BM25's saturation and length normalisation (cards are short and long)
HEADLINE, OTHER_FORM, BEGINNING = 2.5, 0.8, 0.4  # a headline's word counts as 2.5 (as BM25F's titles)
PROXIMITY = 0.15  # of the lesser weight of two neighbouring terms found near each other
FEEDBACK = 0.5  # of the score of the words related to q's, added to a card's
RELATED_CANDIDATES = 100  # cards holding only related words that are ranked, at most

Key = tuple[int, int, int, int, int]  # (every term held, tier, score in thousandths, moment, pk)


@dataclasses.dataclass(frozen=True)
class Found:
    """How a card holds one term."""

    held: bool
    headline: bool  # in the headline (title, notes, tags, AI tags)
    typed: bool  # as typed, a whole word
    whole: bool  # as a whole word, as typed or as another form (not only a beginning)


@dataclasses.dataclass(frozen=True)
class Explanation:
    """Why a card stands where it does (``include=explain``)."""

    every: bool
    tier: int | None  # only for cards holding every term
    score: float
    terms: tuple[Found, ...]  # aligned with the plan's terms
    near: tuple[bool, ...] = ()  # each pair of neighbouring terms found near each other
    related: float = 0.0  # the score of the words related to q's (cardvault.domain.search.feedback)


@dataclasses.dataclass(frozen=True)
class Ranked:
    """A ranked page: each card with its key (what a cursor holds) and explanation, and how many
    cards the ranking holds over all pages."""

    cards: list[tuple[Key, CardView, Explanation]]
    total: int


# Card pks and moments (newest first) of cards holding a term (its texts; None: the phrases
# alone) and every phrase, given about how many cards hold the term.
Reader = Callable[[tuple[Text, ...] | None, int], Sequence[Sequence[Any]]]
Read = tuple[tuple[Text, ...] | None, int]  # a term to read and about how many cards hold it


def ranked(
    session: Session,
    account_id: str,
    plan: Plan,
    first: Sequence[Sequence[Any]],
    read: Reader,
    limit: int,
    position: list[int | str] | None,
) -> Ranked:
    """The page by relevance, when ``first`` (pk, moment) holds every card with every term (at
    most FEW); ``read`` reads a term's cards."""
    holding_all = {row[0]: row[1] for row in first}
    some: dict[int, Any] = {}
    # The rarest first; a term no card holds as a whole word (perhaps as a beginning) last.
    by_rarity = sorted(plan.droppable, key=lambda i: (plan.terms[i].cards == 0, plan.terms[i].cards, i))
    rarest: list[Read] = [(plan.query.required[i], plan.terms[i].cards) for i in by_rarity[:READ_TERMS]]
    if plan.droppable and any(term.strict for term in plan.terms):
        rarest.insert(0, (None, 0))  # cards holding the phrases alone
    _candidates(read, rarest, holding_all, some, CANDIDATES)
    moments = {**holding_all, **some}
    held = _holdings(session, plan, list(moments))
    explained = _scored(plan, held, list(moments), holding_all)
    keys = {pk: key_of(explained[pk], moments[pk], pk) for pk in moments}
    if plan.droppable:  # and the words the best of them share
        ranking = (explained, keys)
        explained, keys = _with_related(session, account_id, plan, read, moments, holding_all, held, ranking)
    order = sorted(moments, key=keys.__getitem__, reverse=True)
    if position is not None:
        order = [pk for pk in order if _before(keys[pk], position)]
    chosen = order[: limit + 1]
    dialect = session.get_bind().dialect.name
    shown = {view.pk: view for view in views(session, _by_pks(dialect), {"pks": _pks_value(dialect, chosen)})}
    return Ranked([(keys[pk], shown[pk], explained[pk]) for pk in chosen], len(moments))


def _with_related(
    session: Session,
    account_id: str,
    plan: Plan,
    read: Reader,
    moments: dict[int, Any],
    holding_every: Collection[int],
    held: Holdings,
    ranking: tuple[dict[int, Explanation], dict[int, Key]],
) -> tuple[dict[int, Explanation], dict[int, Key]]:
    """The ranking with the words related to q's by its best cards counted: the cards holding
    them join ``moments`` (up to RELATED_CANDIDATES) and each card's score gains FEEDBACK of
    theirs (cardvault.domain.search.feedback)."""
    explained, keys = ranking
    best = sorted(moments, key=keys.__getitem__, reverse=True)[: feedback.FEEDBACK_CARDS]
    related = feedback.related(session, account_id, plan, [(pk, explained[pk].score) for pk in best])
    if related is None:
        return ranking
    any_of = tuple(found for group in related.query.required for found in group)
    holding = min(sum(term.cards for term in related.terms), plan.cards)
    _candidates(read, [(any_of, holding)], moments, moments, len(moments) + RELATED_CANDIDATES)
    if more := [pk for pk in moments if pk not in held.found]:
        held.add(_holdings(session, plan, more))
    of_related = _holdings(session, related, list(moments), near=False)
    explained = _scored(plan, held, list(moments), holding_every, (related, of_related))
    return explained, {pk: key_of(explained[pk], moments[pk], pk) for pk in moments}


def _candidates(
    read: Reader,
    terms: list[Read],
    known: Collection[int],
    some: dict[int, Any],
    most: int,
) -> None:
    """Add to ``some`` the cards (pk: moment) holding each term in turn, not ``known``, up to ``most``."""
    for term in terms:
        for row in read(*term):
            if row[0] not in known and len(some) < most:
                some.setdefault(row[0], row[1])
        if len(some) >= most:
            return


def key_of(explained: Explanation, moment: Any, pk: int) -> Key:
    tier = explained.tier if explained.tier is not None else -1
    return (int(explained.every), tier, round(explained.score * 1000), int(moment or 0), pk)


def _before(key: Key, position: list[int | str]) -> bool:
    """Whether a card comes after the cursor's position: a key of this ranking, or a tier's
    position (tier, moment, pk) of a listing that had more cards holding every term."""
    if len(position) == 5:
        return key < tuple(position)
    every, tier, _, moment, pk = key
    return not every or (tier, moment, pk) < tuple(position)


def explain(session: Session, plan: Plan, pks: list[int]) -> dict[int, Explanation]:
    """How each card holds each term, its tier and its score, from its own index rows."""
    return _scored(plan, _holdings(session, plan, pks), pks, ())


@dataclasses.dataclass
class Holdings:
    """How cards hold a plan's terms, from their index rows: Found of each term, whether each
    pair of neighbouring terms is near, and each card's length (distinct indexed words)."""

    found: dict[int, list[Found]]
    near: dict[int, list[bool]]
    lengths: dict[int, int]

    def add(self, other: Holdings) -> None:
        self.found |= other.found
        self.near |= other.near
        self.lengths |= other.lengths


def _holdings(session: Session, plan: Plan, pks: list[int], *, near: bool = True) -> Holdings:
    dialect = session.get_bind().dialect.name
    pairs = max(len(plan.terms) - 1, 0) if near else 0
    return Holdings(*_holding(session, dialect, plan, pks, pairs))


def _scored(
    plan: Plan,
    held: Holdings,
    pks: list[int],
    holding_every: Collection[int],
    related: tuple[Plan, Holdings] | None = None,
) -> dict[int, Explanation]:
    """Each card's tier and score (``holding_every``: cards the index found holding every term,
    a long card's text being read in part); with ``related``, its words' score counts (FEEDBACK
    of it)."""
    lengths = [held.lengths.get(pk, 0) for pk in pks]
    average = (sum(lengths) / len(lengths)) if lengths else 1.0
    shape = matching.shape(plan.query)
    explained = {}
    for pk, length in zip(pks, lengths, strict=True):
        terms = held.found[pk]
        if pk in holding_every:
            terms = [dataclasses.replace(term, held=True) for term in terms]
        every = all(term.held for term in terms)
        tier = None
        if every:
            in_head = sum(term.headline for term in terms)
            where = 2 if in_head == len(terms) else 1 if in_head else 0
            tier = 2 * where + (all(term.typed for term in terms) or not shape.prefixed)
        norm = K1 * (1 - B + B * max(length, 1) / max(average, 1.0))
        score = _bm25(terms, plan.terms, norm)
        near = held.near[pk]
        pairs = zip(plan.terms, plan.terms[1:], near, strict=False)
        score += sum(PROXIMITY * min(a.weight, b.weight) for a, b, is_near in pairs if is_near)
        told = 0.0
        if related is not None:
            told = FEEDBACK * _bm25(related[1].found[pk], related[0].terms, norm)
        explained[pk] = Explanation(every, tier, score + told, tuple(terms), tuple(near), told)
    return explained


def _bm25(found: Sequence[Found], terms: Sequence[Term], norm: float) -> float:
    """Okapi BM25 over the terms a card holds (each once), ``norm`` its length's part."""
    score = 0.0
    for term, planned in zip(found, terms, strict=True):
        if term.held:
            exact = 1.0 if term.typed else OTHER_FORM if term.whole else BEGINNING
            occurs = (HEADLINE if term.headline else 1.0) * exact
            told = planned.weight if term.whole else planned.begun_weight
            score += told * occurs * (K1 + 1) / (occurs + norm)
    return score


def _holding(
    session: Session, dialect: str, plan: Plan, pks: list[int], pairs: int
) -> tuple[dict[int, list[Found]], dict[int, list[bool]], dict[int, int]]:
    """Each card's Found of each term, whether each of the first ``pairs`` pairs of
    neighbouring terms is near (matching.NEAR), from its index rows, and its length (its count
    of distinct indexed words, for BM25)."""
    connection = session.connection()
    terms = len(plan.terms)
    if dialect == "postgresql":  # a row a card
        among = {**matching.text_parameters(dialect, plan.query), "pks": pks}
        none = [Found(False, False, False, False)] * terms
        found = {pk: none for pk in pks}
        near = {pk: [False] * pairs for pk in pks}
        lengths = {}
        for row in connection.execute(text(_pg_holding(terms, pairs)), among):
            lengths[row[0]] = int(row[1])
            found[row[0]] = [Found(*row[2 + 4 * i : 6 + 4 * i]) for i in range(terms)]
            near[row[0]] = list(row[2 + 4 * terms :])
        return found, near, lengths
    # In the process: one read of the candidates' index text (cardvault.domain.search.holding).
    read, near = holding.holding(connection, [term.texts for term in plan.terms], pks, pairs)
    found = {pk: [Found(h.anywhere, h.headline, h.typed, h.whole) for h in read[pk]] for pk in pks}
    return found, near, _lengths(session, pks)


@functools.cache
def _pg_holding(terms: int, pairs: int) -> str:
    """One statement of the cards' index rows, a row a card: its length, whether it holds each
    term (anywhere, in the headline, as typed, whole) and each pair of neighbouring terms near."""
    tests = ["max(c.search_words)"]
    for i in range(terms):
        found = f"words @@ CAST(:g{i} AS tsquery)"
        tests += [
            f"bool_or({found})",
            f"bool_or(part > 0 AND {found})",
            f"bool_or(words @@ CAST(:g{i}_w AS tsquery))",
            f"bool_or(words @@ CAST(:g{i}_f AS tsquery))",
        ]
    tests += [f"bool_or(words @@ CAST(:p{i} AS tsquery))" for i in range(pairs)]
    return (
        f"SELECT s.card_pk, {', '.join(tests)} FROM card_search s JOIN cards c ON c.pk = s.card_pk "
        "WHERE s.card_pk = ANY(CAST(:pks AS bigint[])) GROUP BY s.card_pk"
    )


def _lengths(session: Session, pks: list[int]) -> dict[int, int]:
    """Each card's count of distinct indexed words (SQLite)."""
    if not pks:
        return {}
    rows = session.connection().execute(
        text("SELECT pk, search_words FROM cards WHERE pk IN (SELECT value FROM json_each(:pks))"),
        {"pks": json.dumps(pks)},
    )
    return {row[0]: int(row[1]) for row in rows}


@functools.cache
def _by_pks(dialect: str) -> Select[Any]:
    """The views of the cards whose pks are bound as ``pks`` (a list: _pks_value)."""
    if dialect == "sqlite":
        listed = text("SELECT value FROM json_each(:pks)").columns(column("value", BigInteger))
        return view_query(dialect).where(Card.pk.in_(listed))
    return view_query(dialect).where(Card.pk == any_(bindparam("pks", type_=ARRAY(BigInteger))))


def _pks_value(dialect: str, pks: list[int]) -> Any:
    return json.dumps(pks) if dialect == "sqlite" else pks
