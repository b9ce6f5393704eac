"""The processing pipeline's bookkeeping: which stages a card runs, and each stage's state, kept
in ``card_stages``. The row is the truth: a worker starts a stage only from ``pending`` (or a
``running`` one whose worker went quiet, re-sent by the sweeper) and takes a lease; only the
holder of the current lease records a result, so a lost, repeated or outrun message (the card
was refreshed meanwhile) changes nothing.

A stage fails for good (``failed``, with a stable error code) when no retry can help: the page
is gone, the address refused, the image broken. It fails for a passing reason (a timeout, a
server error) up to MAX_ATTEMPTS times, waiting longer each time, and then fails for good with
the last reason. A stage can also be ``skipped``: nothing to do for this card (a link page with
no image), with the reason as its error code.

Which stages a card runs, in which order and after which, is the table in
cardvault.domain.pipeline.table; a stage named there as waiting for another waits for that one to
settle, whatever its outcome, except that it is skipped (with the table's code) when that one
did not complete.

Every write of a card that queues stages (adding, editing, refreshing, importing, restoring
it) answers Written: the card and the stages to send once its transaction commits, which one
function does (cardvault.workers.pipeline.send_after_commit)."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping, Sequence

from sqlalchemy import exists, select, tuple_, update
from sqlalchemy.orm import Session, aliased

from cardvault.domain import changes
from cardvault.domain.clock import now_ms
from cardvault.domain.db import rows_changed
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline.table import BY_NAME, MAX_ATTEMPTS, stages_of_kind, waits_for


@dataclasses.dataclass(frozen=True)
class Written:
    """A card as a write left it, and the stages the write queued: to send once its
    transaction commits (``imported``: to the imported queue)."""

    card: Card
    stages: tuple[str, ...] = ()
    imported: bool = False


@dataclasses.dataclass(frozen=True)
class Settled:
    """``start`` settled the stage without running it (its attempts ran out, or the stage it
    waits for did not complete): the stages that wait for it are to be sent."""

    card_type: str
    imported: bool = False  # queued by an import: its followers go to the imported queue
    state: str = "failed"  # or skipped (the stage it waits for did not complete)


@dataclasses.dataclass(frozen=True)
class Taken:
    """A started attempt: the card as it was, and the lease its result must show."""

    card: Card
    lease: str
    attempts: int
    imported: bool = False  # queued by an import (cardvault.domain.pipeline.table.IMPORTED_QUEUE)


@dataclasses.dataclass(frozen=True)
class Unsettled:
    """A stage for the sweeper to send again."""

    card_pk: int
    stage: str
    imported: bool
    pending: bool = False  # (not running): its message may still wait in its queue
    updated_at: int = 0  # its last sign of life: when it was queued or sent again, for a pending one


def stages_for(card: Card) -> tuple[str, ...]:
    """The stages a card runs: a text or quote card's, a link card's with a URL, a file card's
    with its file (none for a palette, a link without a URL or a card without its file)."""
    if card.type in ("text", "quote"):
        return stages_of_kind(card.type)
    if card.type == "link":
        return stages_of_kind("link") if card.url else ()
    return stages_of_kind(card.type) if card.file_object is not None else ()


def queue(
    session: Session, card: Card, names: Sequence[str] | None = None, *, imported: bool = False
) -> tuple[str, ...]:
    """Make these stages of the card (default: all its stages) pending from the start, as if
    they never ran; return the names to send after the commit (a stage that waits for another
    is sent by that one). ``imported``: queued by an import, to run behind stages queued by
    hand (a stage queued again by hand is no longer imported)."""
    names = stages_for(card) if names is None else tuple(names)
    if not names:
        return ()
    now = now_ms()
    session.flush()  # the card's pk, when it is new
    rows = {
        row.stage: row
        for row in session.scalars(
            select(CardStage)
            .where(CardStage.card_pk == card.pk, CardStage.stage.in_(names))
            .with_for_update()
        )
    }
    for name in names:
        row = rows.get(name) or CardStage(card_pk=card.pk, stage=name)
        row.state, row.attempts, row.updated_at, row.lease = "pending", 0, now, None
        row.imported = imported
        row.error_code = row.started_at = row.completed_at = None
        row.turn_account_id = row.turn_at = None  # waits for no turn unless its import says so
        session.add(row)
    # Its processing status changed (the caller holds the card's row): a change for the feed.
    changes.note(session, account_id=card.account_id, kind="card", ids=[card.id])
    return tuple(name for name in names if waits_for(card.type, name) not in names)


def queue_new(session: Session, cards: Sequence[Card], *, imported: bool = False) -> list[tuple[str, ...]]:
    """``queue`` of every stage of cards made in this transaction (flushed: they have their
    pk, and no stage rows to read): each card's names to send after the commit."""
    now = now_ms()
    sent = []
    for card in cards:
        names = stages_for(card)
        session.add_all(
            CardStage(
                card_pk=card.pk, stage=name, state="pending", attempts=0, updated_at=now, imported=imported
            )
            for name in names
        )
        sent.append(tuple(name for name in names if waits_for(card.type, name) not in names))
    return sent


def start(
    session: Session, *, card_pk: int, stage: str, stale_before: int, lease: str | None = None
) -> Taken | Settled | None:
    """Take the stage for this worker: from pending, or from running when its last sign of life
    is older than ``stale_before`` (its worker died). None when there is nothing to do (done,
    failed, taken by a live worker, waiting for the stage it follows, or the card is gone).
    A stage whose attempts ran out fails with the last reason, and one that follows a stage
    that failed or was skipped is skipped: both answer Settled.

    The attempt's ``lease`` may be the caller's own: run again after its COMMIT was lost (it
    may have been saved), start then finds the stage taken under that lease and answers Taken,
    as the first run did."""
    # The card before its stage row (the lock order in cardvault.domain.db): a stage settled
    # here is a change of the card, whose version the feed raises at COMMIT.
    card = session.get(Card, card_pk, with_for_update=True)
    if card is None:
        return None
    row = session.scalars(
        select(CardStage).where(CardStage.card_pk == card_pk, CardStage.stage == stage).with_for_update()
    ).one_or_none()
    if row is None or row.state not in ("pending", "running"):
        return None
    if lease is not None and row.state == "running" and row.lease == lease:
        return Taken(card=card, lease=lease, attempts=row.attempts, imported=row.imported)
    if row.state == "running" and row.updated_at >= stale_before:
        return None
    now = now_ms()
    before = waits_for(card.type, stage)
    if before is not None:
        first = session.get(CardStage, (card_pk, before))
        if first is not None and first.state in ("pending", "running"):
            row.updated_at = now  # the sweeper's oldest-first window goes to others
            return None  # the stage it follows sends it when it is done
        table_row = BY_NAME[stage]
        skipped_code = table_row.skipped_after_failure
        if table_row.runs_anyway_with and getattr(card, table_row.runs_anyway_with) is not None:
            skipped_code = None
        if first is not None and first.state in ("failed", "skipped") and skipped_code:
            _settle(row, "skipped", skipped_code, now)
            _note_settled(session, card.account_id, card.id, card_pk)
            return Settled(card.type, row.imported, state="skipped")
    if row.attempts >= MAX_ATTEMPTS:
        _settle(row, "failed", row.error_code or "TOO_MANY_ATTEMPTS", now)
        _note_settled(session, card.account_id, card.id, card_pk)
        return Settled(card.type, row.imported, state="failed")
    row.state, row.attempts, row.started_at, row.updated_at = "running", row.attempts + 1, now, now
    row.lease = lease or secrets.token_hex(16)
    return Taken(card=card, lease=row.lease, attempts=row.attempts, imported=row.imported)


def _settle(row: CardStage, state: str, error_code: str | None, now: int) -> None:
    row.state, row.error_code, row.completed_at, row.updated_at, row.lease = state, error_code, now, now, None


def finish(
    session: Session,
    *,
    card_pk: int,
    stage: str,
    lease: str,
    state: str = "completed",
    error_code: str | None = None,
) -> bool:
    """Settle the attempt holding ``lease``: completed, failed or skipped (with ``error_code``).
    False when the lease is no longer current (the card is gone, or was refreshed, or another
    worker took the stage over): the attempt's result must then be dropped."""
    now = now_ms()
    # The card first, then its stage row (the lock order in cardvault.domain.db): the feed
    # raises the card's version at COMMIT, under this lock.
    owner = session.execute(
        select(Card.account_id, Card.id).where(Card.pk == card_pk).with_for_update()
    ).one_or_none()
    settled = rows_changed(
        session,
        update(CardStage)
        .where(CardStage.card_pk == card_pk, CardStage.stage == stage, CardStage.lease == lease)
        .values(state=state, error_code=error_code, completed_at=now, updated_at=now, lease=None),
    )
    if settled and owner is not None:
        _note_settled(session, owner.account_id, owner.id, card_pk)
    return bool(settled)


def _note_settled(session: Session, account_id: str, card_id: str, card_pk: int) -> None:
    """A stage of the card settled: its processing status changed, a change of the card for
    the feed (the caller holds the card's row). The last stage to settle settles the card's
    processing: its webhooks say card.processed."""
    session.flush()
    unsettled = select(CardStage.stage).where(
        CardStage.card_pk == card_pk, CardStage.state.in_(("pending", "running"))
    )
    marks = 0 if session.scalar(unsettled.limit(1)) is not None else changes.SETTLED
    changes.note(session, account_id=account_id, kind="card", ids=[card_id], marks=marks)


def release(
    session: Session,
    *,
    card_pk: int,
    stage: str,
    lease: str,
    error_code: str | None,
    counted: bool = True,
    due_at: int | None = None,
) -> None:
    """Put the attempt's stage back to pending (it failed for a reason that may pass; the retry
    that follows takes it again), keeping the reason; an attempt not ``counted`` (it waited
    for a shared resource and did nothing) gives its attempt back. ``due_at``: when the stage
    is sent again (a wait for its host's turn may be hours): it counts as a sign of life, so
    the sweeper leaves the stage alone until a stale time past it."""
    values: dict[str, object] = {
        "state": "pending",
        "error_code": error_code,
        "updated_at": max(now_ms(), due_at or 0),
        "lease": None,
    }
    if not counted:
        values["attempts"] = CardStage.attempts - 1
    session.execute(
        update(CardStage)
        .where(CardStage.card_pk == card_pk, CardStage.stage == stage, CardStage.lease == lease)
        .values(**values)
    )


# (card type, stage, the stage it waits for), every pair the pipeline's table names.
_FOLLOWING = sorted((kind, row.name, first) for row in BY_NAME.values() for kind, first in row.after.items())


def unsettled(
    session: Session, *, older_than: int, imported_older_than: int | None = None, limit: int = 500
) -> list[Unsettled]:
    """Stages for the sweeper to send again: pending or running with no sign of life since
    ``older_than``. A pending one's message was lost (or waits behind a long queue); a running
    one's worker died, since a live worker beats for every attempt it runs (``beat``). A
    pending imported stage waits behind an import's whole backlog: it is sent again only with
    no sign of life since ``imported_older_than`` (default: ``older_than``), and one waiting
    for its account's turn (cardvault.domain.portability.imports.turns) is the turns' to send.
    A pending stage that waits for a stage still pending or running (a link's preview for its
    page) has no message to lose: that stage sends it when it settles. Sent again every stale
    time, a backlog's followers were most of the sweeper's messages (35,346 for 2,668 stages
    after 25 worker restarts), each one a worker's turn spent on a stage not yet due."""
    imported_older_than = older_than if imported_older_than is None else imported_older_than
    before = aliased(CardStage)
    waiting_for_the_stage_it_follows = exists().where(  # sent when that one settles: no message lost
        Card.pk == CardStage.card_pk,
        before.card_pk == CardStage.card_pk,
        before.state.in_(("pending", "running")),
        tuple_(Card.type, CardStage.stage, before.stage).in_(_FOLLOWING),
    )
    waiting_for_its_turn = CardStage.turn_account_id.is_not(None) & CardStage.turn_at.is_(None)
    waiting_behind_an_import = waiting_for_its_turn | (
        (CardStage.state == "pending") & CardStage.imported & (CardStage.updated_at >= imported_older_than)
    )
    rows = session.execute(
        select(CardStage.card_pk, CardStage.stage, CardStage.imported, CardStage.state, CardStage.updated_at)
        .where(
            CardStage.state.in_(("pending", "running")),
            CardStage.updated_at < older_than,
            ~waiting_behind_an_import,
            ~((CardStage.state == "pending") & waiting_for_the_stage_it_follows),
        )
        .order_by(CardStage.updated_at)
        .limit(limit)
    )
    return [
        Unsettled(pk, stage, imported, state == "pending", updated_at)
        for pk, stage, imported, state, updated_at in rows
    ]


def beat(session: Session, attempts: Mapping[str, tuple[int, str]]) -> None:
    """Record a sign of life of running attempts (lease -> card pk and stage) whose worker is
    alive: a running stage is taken over by another worker only once its last sign of life is
    older than the stale time, so a killed worker's stages are taken over in about that time,
    not after the stage's whole time limit."""
    if attempts:
        session.execute(
            update(CardStage)
            .where(
                tuple_(CardStage.card_pk, CardStage.stage).in_(list(attempts.values())),
                CardStage.lease.in_(list(attempts)),
                CardStage.state == "running",
            )
            .values(updated_at=now_ms())
        )


def resent(session: Session, stages: Sequence[tuple[int, str]], *, older_than: int) -> None:
    """Record that the sweeper has sent these stages again: a pending one's time moves to now,
    so it is sent again only when it goes another ``older_than`` without a sign of life. (A
    message still waiting behind a long queue is then not sent again on every pass.)"""
    if stages:
        session.execute(
            update(CardStage)
            .where(
                tuple_(CardStage.card_pk, CardStage.stage).in_(list(stages)),
                CardStage.state == "pending",
                CardStage.updated_at < older_than,
            )
            .values(updated_at=now_ms())
        )
