"""Turns between accounts for the stages their imports queue. An import's new cards' first
stages are not sent when their batch commits: they wait in the table (``turn_account_id`` set,
``turn_at`` NULL), and ``next_turns`` hands them out a few per account at a time, the accounts
in turn, the least recently served first. An account has at most TURNS_PER_ACCOUNT of them sent
and not settled, so one account's million waiting stages are never in front of another's
first: the queue holds a few of each account's at a time, whatever their backlogs.

``import_turns`` lists the accounts with stages waiting (a row per account, added by the batch
that queued them, dropped once none wait). The stages a sent stage leads to (a link's preview
and capture after its page) follow it on its turn, as before."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.models import CardStage, ImportTurn

TURNS_PER_ACCOUNT = 8  # an account's imported stages sent and not settled, at most
ACCOUNTS_PER_PASS = 50  # accounts one call serves, the least recently served first


def wait_for_turns(session: Session, *, account_id: str, stages: Sequence[tuple[int, str]]) -> None:
    """Make these new stages of the account's cards wait for its turns (in the transaction that
    queued them; after its other locks: the turn row is locked by nothing else but
    ``next_turns``, which finds the stages once this commits)."""
    if not stages:
        return
    for card_pk, stage in stages:
        row = session.get(CardStage, (card_pk, stage))
        if row is not None:
            row.turn_account_id, row.turn_at = account_id, None
    # Locked, so that a ``next_turns`` that found none of these stages waiting (they were not
    # committed yet) cannot drop the row under them: it drops it only while it holds the lock.
    turn = session.scalar(select(ImportTurn).where(ImportTurn.account_id == account_id).with_for_update())
    if turn is None:
        session.add(ImportTurn(account_id=account_id, served_at=0))  # a newcomer is served first


def next_turns(
    session: Session, *, account_id: str | None = None, per_account: int = TURNS_PER_ACCOUNT
) -> list[tuple[int, str]]:
    """Mark sent, and return (card pk, stage), the next waiting stages of each account with
    room (of ``account_id`` alone, when given), the least recently served accounts first; an
    account with nothing left waiting leaves the turns. Accounts another call is serving are
    skipped (PostgreSQL's SKIP LOCKED)."""
    query = select(ImportTurn).order_by(ImportTurn.served_at, ImportTurn.account_id)
    if account_id is not None:
        query = query.where(ImportTurn.account_id == account_id)
    turns = session.scalars(query.limit(ACCOUNTS_PER_PASS).with_for_update(skip_locked=True)).all()
    now, sent = now_ms(), []
    for turn in turns:
        in_flight = session.scalar(
            select(func.count())
            .select_from(CardStage)
            .where(
                CardStage.turn_account_id == turn.account_id,
                CardStage.turn_at.is_not(None),
                CardStage.state.in_(("pending", "running")),
            )
        )
        room = per_account - (in_flight or 0)
        waiting = session.scalars(
            select(CardStage)
            .where(CardStage.turn_account_id == turn.account_id, CardStage.turn_at.is_(None))
            .order_by(CardStage.card_pk, CardStage.stage)
            .limit(max(room, 1))
            .with_for_update()
        ).all()
        if not waiting:
            session.delete(turn)
            continue
        if room <= 0:
            continue
        for row in waiting:
            # Its wait behind the turns was no silence: the sweeper counts from its turn.
            row.turn_at = row.updated_at = now
            sent.append((row.card_pk, row.stage))
        turn.served_at = now
    return sent
