"""The processing pipeline's bookkeeping: which stages a card runs, and each stage's state, kept
in ``card_stages``. The row is the truth: a worker starts a stage only from ``pending`` (or a
``running`` one whose worker went quiet, re-sent by the sweeper), so a lost or repeated message
changes nothing. A stage that keeps failing for a passing reason gives up after MAX_ATTEMPTS.

Stages by card type (the pipeline issues add more): an image card makes its ``renditions``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.models import Card, CardStage

MAX_ATTEMPTS = 5
STAGES = {"image": ("renditions",)}
ORDER = ("linkMetadata", "linkPreview", "renditions", "media", "transcript", "summary", "tags")


def stages_for(card: Card) -> tuple[str, ...]:
    """The stages a card runs (none for a card without a file of a kind that has them)."""
    return STAGES.get(card.type, ()) if card.file_object is not None else ()


def queue(session: Session, card: Card) -> tuple[str, ...]:
    """Make the card's stages pending; return their names (to send after the commit)."""
    names = stages_for(card)
    now = now_ms()
    for name in names:
        session.add(CardStage(card_pk=card.pk, stage=name, state="pending", attempts=0, updated_at=now))
    return names


def start(session: Session, *, card_pk: int, stage: str, stale_before: int) -> Card | None:
    """Take the stage for this worker: from pending, or from running when its last sign of life
    is older than ``stale_before`` (its worker died). Return the card, or None when there is
    nothing to do (done, failed, taken by a live worker, or the card is gone)."""
    row = session.scalars(
        select(CardStage).where(CardStage.card_pk == card_pk, CardStage.stage == stage).with_for_update()
    ).one_or_none()
    if row is None or row.state not in ("pending", "running"):
        return None
    if row.state == "running" and row.updated_at >= stale_before:
        return None
    now = now_ms()
    if row.attempts >= MAX_ATTEMPTS:
        row.state, row.error_code, row.completed_at, row.updated_at = "failed", "TOO_MANY_ATTEMPTS", now, now
        return None
    row.state, row.attempts, row.started_at, row.updated_at = "running", row.attempts + 1, now, now
    return session.get(Card, card_pk)


def finish(session: Session, *, card_pk: int, stage: str, error_code: str | None = None) -> bool:
    """Mark the stage completed (or failed with ``error_code``); False when it is no longer
    running (the card is gone, or was refreshed meanwhile)."""
    now = now_ms()
    done = session.execute(
        update(CardStage)
        .where(CardStage.card_pk == card_pk, CardStage.stage == stage, CardStage.state == "running")
        .values(
            state="failed" if error_code else "completed",
            error_code=error_code,
            completed_at=now,
            updated_at=now,
        )
    )
    return bool(done.rowcount)


def release(session: Session, *, card_pk: int, stage: str) -> None:
    """Put a running stage back to pending (it failed for a reason that may pass: the retry
    that follows takes it again)."""
    session.execute(
        update(CardStage)
        .where(CardStage.card_pk == card_pk, CardStage.stage == stage, CardStage.state == "running")
        .values(state="pending", updated_at=now_ms())
    )


def unsettled(session: Session, *, older_than: int, limit: int = 500) -> list[tuple[int, str]]:
    """Stages pending or running with no sign of life since ``older_than`` (for the sweeper)."""
    rows = session.execute(
        select(CardStage.card_pk, CardStage.stage)
        .where(CardStage.state.in_(("pending", "running")), CardStage.updated_at < older_than)
        .order_by(CardStage.updated_at)
        .limit(limit)
    )
    return [(pk, stage) for pk, stage in rows]


def status_json(rows: Sequence[CardStage] | Sequence[Any]) -> dict[str, Any] | None:
    """``processingStatus``: the stages in the order they run, and their sum (failed if any
    failed, else running, pending, all skipped, or completed). None when the card has none."""
    if not rows:
        return None
    stages = sorted(rows, key=lambda r: ORDER.index(r.stage) if r.stage in ORDER else len(ORDER))
    states = {r.state for r in stages}
    state = next(
        (s for s in ("failed", "running", "pending") if s in states),
        "skipped" if states == {"skipped"} else "completed",
    )
    return {
        "state": state,
        "stages": [
            {
                "name": r.stage,
                "state": r.state,
                "attempts": r.attempts,
                "startedAt": r.started_at,
                "completedAt": r.completed_at,
                "errorCode": r.error_code,
            }
            for r in stages
        ],
        "updatedAt": max(r.updated_at for r in stages),
    }


def stages_of(session: Session, card_pks: Sequence[int]) -> dict[int, list[CardStage]]:
    """The stages of these cards, by card."""
    found: dict[int, list[CardStage]] = {}
    if card_pks:
        for row in session.scalars(select(CardStage).where(CardStage.card_pk.in_(card_pks))):
            found.setdefault(row.card_pk, []).append(row)
    return found
