"""The account's tag counts, kept as tags change, so the tag list reads a page of counts instead
of grouping every tag row of the account: how many cards outside Trash carry each tag
(``tag_counters``), and how many tag rows of such cards use each spelling (``tag_spellings``,
which picks the name shown).

Every writer that changes which tags a card outside Trash carries, or moves a card into or out
of Trash, tallies the tags before and after and applies the difference here, last in its
transaction: the counters are the bottom of the lock order in cardvault.domain.db, taken in
name_key order."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from sqlalchemy import delete, select, text
from sqlalchemy.orm import Session

from cardvault.domain import changes
from cardvault.domain.models import Card, CardTag, TagCounter, TagSpelling


@dataclasses.dataclass(frozen=True)
class Tally:
    """Cards per tag key, and tag rows per (key, spelling), of some cards outside Trash."""

    cards: Counter[str] = dataclasses.field(default_factory=Counter)
    spellings: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)


NONE = Tally()


def tally(rows: Iterable[tuple[int, str, str]]) -> Tally:
    """Tally (card pk, name_key, name) tag rows of cards outside Trash."""
    rows = list(rows)
    return Tally(
        Counter(key for _, key in {(pk, key) for pk, key, _ in rows}),
        Counter((key, name) for _, key, name in rows),
    )


def combined(tallies: Iterable[Tally]) -> Tally:
    """The tally of several cards, from each one's."""
    total = Tally()
    for one in tallies:
        total.cards.update(one.cards)
        total.spellings.update(one.spellings)
    return total


def card_tally(card: Card) -> Tally:
    """Tally one card's tags; a card in Trash counts for nothing."""
    if card.deleted_at is not None:
        return NONE
    return tally((card.pk, row.name_key, row.name) for row in card.tag_rows)


class TagRow(NamedTuple):
    card_pk: int
    kind: str
    name_key: str
    name: str


def range_rows(
    session: Session, *, account_id: str, keys: Iterable[str], after_pk: int, last_pk: int
) -> list[TagRow]:
    """The rows with these keys of the account's cards outside Trash in (after_pk, last_pk]."""
    rows = session.execute(
        select(CardTag.card_pk, CardTag.kind, CardTag.name_key, CardTag.name)
        .join(Card, Card.pk == CardTag.card_pk)
        .where(
            CardTag.account_id == account_id,
            CardTag.name_key.in_(sorted(set(keys))),
            CardTag.card_pk > after_pk,
            CardTag.card_pk <= last_pk,
            # The same range on the cards, so they are read by it, not scanned for the join.
            Card.pk > after_pk,
            Card.pk <= last_pk,
            Card.deleted_at.is_(None),
        )
    )
    return [TagRow._make(row) for row in rows]


def rows_tally(rows: Iterable[TagRow]) -> Tally:
    """Tally tag rows of cards outside Trash."""
    return tally((row.card_pk, row.name_key, row.name) for row in rows)


_ADD_CARDS = text(
    "INSERT INTO tag_counters (account_id, name_key, cards) VALUES (:account, :key, :delta) "
    "ON CONFLICT (account_id, name_key) DO UPDATE SET cards = tag_counters.cards + excluded.cards"
)
_ADD_USES = text(
    "INSERT INTO tag_spellings (account_id, name_key, name, uses) VALUES (:account, :key, :name, :delta) "
    "ON CONFLICT (account_id, name_key, name) DO UPDATE SET uses = tag_spellings.uses + excluded.uses"
)


def apply(session: Session, *, account_id: str, before: Tally, after: Tally) -> None:
    """Move the account's counts by the difference between two tallies of the same cards."""
    cards = {k: after.cards[k] - before.cards[k] for k in sorted(before.cards.keys() | after.cards.keys())}
    uses = {
        s: after.spellings[s] - before.spellings[s]
        for s in sorted(before.spellings.keys() | after.spellings.keys())
    }
    cards = {k: d for k, d in cards.items() if d}
    uses = {s: d for s, d in uses.items() if d}
    changes.note(session, account_id=account_id, kind="tag", ids=sorted(cards.keys() | {k for k, _ in uses}))
    if cards:
        session.execute(_ADD_CARDS, [{"account": account_id, "key": k, "delta": d} for k, d in cards.items()])
        session.execute(
            delete(TagCounter).where(
                TagCounter.account_id == account_id,
                TagCounter.name_key.in_(list(cards)),
                TagCounter.cards == 0,
            )
        )
    if uses:
        session.execute(
            _ADD_USES,
            [{"account": account_id, "key": k, "name": n, "delta": d} for (k, n), d in uses.items()],
        )
        session.execute(
            delete(TagSpelling).where(
                TagSpelling.account_id == account_id,
                TagSpelling.name_key.in_(sorted({k for k, _ in uses})),
                TagSpelling.uses == 0,
            )
        )


_RECOUNT = [
    "INSERT INTO tag_counters (account_id, name_key, cards) "
    "SELECT t.account_id, t.name_key, count(DISTINCT t.card_pk) FROM card_tags t "
    "JOIN cards c ON c.pk = t.card_pk WHERE t.account_id = :account AND c.deleted_at IS NULL "
    "GROUP BY t.account_id, t.name_key",
    "INSERT INTO tag_spellings (account_id, name_key, name, uses) "
    "SELECT t.account_id, t.name_key, t.name, count(*) FROM card_tags t "
    "JOIN cards c ON c.pk = t.card_pk WHERE t.account_id = :account AND c.deleted_at IS NULL "
    "GROUP BY t.account_id, t.name_key, t.name",
]


def recount(session: Session, *, account_id: str) -> None:
    """Rebuild the account's counts from its tag rows (for data written around the domain)."""
    session.execute(delete(TagCounter).where(TagCounter.account_id == account_id))
    session.execute(delete(TagSpelling).where(TagSpelling.account_id == account_id))
    for statement in _RECOUNT:
        session.execute(text(statement), {"account": account_id})
