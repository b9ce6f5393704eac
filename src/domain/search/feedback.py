"""Pseudo-relevance feedback (as RM3 and Lucene's "more like this"): the words a search's best
matches share tell what else the question is about. A question's words are often not the words
of the cards that answer it ("fall asleep faster" and a card of sleep rules); the best matches'
other words ("sleep") find them.

After a first ranking, the words of its best FEEDBACK_CARDS cards (their headline and tags,
and the first BODY_WORDS distinct words of the body) are weighed: each card by its score
against the best one's, each word by how many of them hold it and how rare it is in the
account's cards (BM25's inverse document frequency). Stop words, q's own words and their
forms, and words no other card holds are left out; the best RELATED_WORDS words make a plan of
their own, whose score (times ranking.FEEDBACK) is added to each card's."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.orm import Session

from cardvault.domain.search.holding import TEXT_CHARACTERS
from cardvault.domain.search.index import GAP
from cardvault.domain.search.planning import Plan, Term, weight
from cardvault.domain.search.query import Query, Text
from cardvault.domain.search.stopwords import STOP_WORDS

FEEDBACK_CARDS = 3  # the best cards of the first ranking whose words are read
BODY_WORDS = 300  # a body's first distinct words read (the headline's and the tags' all)
RELATED_WORDS = 10  # the words added, at most
SHORTEST = 3  # letters of the shortest word added

_PG_WORDS = text(f"""
SELECT card_pk, lexeme FROM (
    SELECT s.card_pk, w.lexeme, s.part, row_number() OVER (
        PARTITION BY s.card_pk, s.part = 0 ORDER BY w.positions[1], w.lexeme
    ) AS n
    FROM card_search s, unnest(s.words) AS w
    WHERE s.card_pk = ANY(CAST(:pks AS bigint[]))
) AS read WHERE part <> 0 OR n <= {BODY_WORDS}
""")
_SQLITE_TEXTS = text(
    f"SELECT rowid, substr(headline, 1, {TEXT_CHARACTERS}), substr(body, 1, {TEXT_CHARACTERS}) "
    "FROM card_search WHERE rowid IN (SELECT value FROM json_each(:pks)) "
    f"UNION ALL SELECT rowid, substr(words, 1, {TEXT_CHARACTERS}), NULL FROM card_tag_search "
    "WHERE rowid IN (SELECT value FROM json_each(:pks))"
)
_PG_CARDS = text(
    "SELECT word, cards FROM search_words WHERE account_id = :account AND word = ANY(CAST(:words AS text[]))"
)
_SQLITE_CARDS = text(
    "SELECT word, cards FROM search_words WHERE account_id = :account "
    "AND word IN (SELECT value FROM json_each(:words))"
)


def card_words(session: Session, pks: Sequence[int]) -> dict[int, set[str]]:
    """Each card's words that feedback reads: its headline's and tags' words, and its body's
    first BODY_WORDS distinct words."""
    found: dict[int, set[str]] = {pk: set() for pk in pks}
    if not pks:
        return found
    if session.get_bind().dialect.name == "postgresql":
        for pk, word in session.execute(_PG_WORDS, {"pks": list(pks)}):
            found[pk].add(word)
        return found
    for pk, headline, body in session.execute(_SQLITE_TEXTS, {"pks": json.dumps(list(pks))}):
        found[pk].update(word for word in (headline or "").split() if word != GAP)
        read: dict[str, None] = {}
        for word in (body or "").split():
            if len(read) >= BODY_WORDS:
                break
            if word != GAP:
                read.setdefault(word)
        found[pk].update(read)
    return found


def _cards_holding(session: Session, account_id: str, words: list[str]) -> dict[str, int]:
    if session.get_bind().dialect.name == "postgresql":
        rows = session.execute(_PG_CARDS, {"account": account_id, "words": words})
    else:
        rows = session.execute(_SQLITE_CARDS, {"account": account_id, "words": json.dumps(words)})
    return {word: int(cards) for word, cards in rows}


def related(session: Session, account_id: str, plan: Plan, best: Sequence[tuple[int, float]]) -> Plan | None:
    """The plan of the words related to q's by its best cards (pk, score), best first; None
    when there are none."""
    best = [(pk, score) for pk, score in best[:FEEDBACK_CARDS] if score > 0]
    if not best:
        return None
    asked = {word for term in plan.terms for found in term.texts for word in found.words}
    words = card_words(session, [pk for pk, _ in best])
    top = best[0][1]
    share: dict[str, float] = {}
    for pk, score in best:
        for word in words[pk]:
            if len(word) >= SHORTEST and word not in STOP_WORDS and word not in asked:
                share[word] = share.get(word, 0.0) + score / top
    if not share:
        return None
    holding = _cards_holding(session, account_id, sorted(share))
    told = {
        word: (share[word] * weight(plan.cards, cards), cards)
        for word, cards in holding.items()
        if 2 <= cards < plan.cards
    }
    chosen = sorted(told, key=lambda word: (-told[word][0], word))[:RELATED_WORDS]
    if not chosen:
        return None
    # A related word is found as written, a whole word (not as a beginning, nor in other forms).
    groups = tuple((Text((word,), prefix=False),) for word in chosen)
    terms = tuple(
        Term(group, told[word][1], told[word][0], told[word][0], strict=False)
        for word, group in zip(chosen, groups, strict=True)
    )
    return Plan(Query(required=groups), terms, plan.cards)
