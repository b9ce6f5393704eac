"""How many cards an account holds (Trash included), kept on its row (``cards_held``) so the
cap on cards (CARDVAULT_MAX_CARDS) reads one row however many it has. It moves in the
transaction of every change to what it counts: a card made (``cards.editing.add_card``, or an
import's batch at its end) and a card deleted for good (``cards.trash``). Like the storage
quotas' counters (cardvault.domain.files.quotas) the account's row is the last lock its
writers take."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cardvault.domain.db import rows_changed
from cardvault.domain.errors import CardLimitReached
from cardvault.domain.models import Account


def take(session: Session, *, account_id: str, cards: int = 1, limit: int | None = None) -> None:
    """Count ``cards`` more cards of the account; CardLimitReached (nothing counted) when that
    would take it past ``limit``. One conditional statement: two writers racing for the last
    room cannot both pass."""
    statement = update(Account).where(Account.id == account_id)
    if limit is not None:
        statement = statement.where(Account.cards_held + cards <= limit)
    if not rows_changed(session, statement.values(cards_held=Account.cards_held + cards)):
        raise CardLimitReached(limit or 0)


def held(session: Session, *, account_id: str) -> int:
    """The cards the account holds, as last committed (unlocked: a batch's first estimate)."""
    return int(session.scalar(select(Account.cards_held).where(Account.id == account_id)) or 0)


def release(session: Session, deleted: Mapping[str, int]) -> None:
    """Count the cards deleted for good (account ids to how many), the accounts' rows in id
    order (the lock order of several accounts' rows)."""
    for account_id, many in sorted(deleted.items()):
        if many:
            session.execute(
                update(Account).where(Account.id == account_id).values(cards_held=Account.cards_held - many)
            )
