"""What responses show of a card's pipeline: its stages as read for a page of cards
(StageView, without the ORM), ``processingStatus`` and a link's ``metadataStatus``. The state
the stages sum to is the model's (cardvault.domain.models.pipeline: ``summary_state`` in
Python, ``in_state`` in SQL), so that listings filter by it without the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.models import CardStage
from cardvault.domain.models.pipeline import summary_state
from cardvault.domain.pipeline.table import ORDER


class StageView(NamedTuple):
    """A stage as responses show it (read without the ORM: a page of cards has hundreds)."""

    stage: str
    state: str
    attempts: int
    started_at: int | None
    completed_at: int | None
    error_code: str | None
    updated_at: int


# CardStage's columns in StageView's order.
STAGE_COLUMNS = tuple(CardStage.__table__.c[name] for name in StageView._fields)


def status_json(rows: Sequence[StageView], ocr_facts: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``processingStatus``: the stages in the order they run, and their sum, with what read
    the card's ``fileText`` (``ocr``, on the extended card once the ocr stage wrote it). None
    when the card has none."""
    if not rows:
        return None
    stages = sorted(rows, key=lambda r: ORDER.index(r.stage) if r.stage in ORDER else len(ORDER))
    shown = {} if ocr_facts is None else {"ocr": ocr_facts}
    return {
        **shown,
        "state": summary_state({r.state for r in stages}),
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


def metadata_status(rows: Sequence[StageView]) -> str | None:
    """``metadataStatus`` of a link: its ``linkMetadata`` stage's state, as ``pending`` (also
    while it runs), ``completed`` or ``failed``; None for a card without the stage."""
    row = next((r for r in rows if r.stage == "linkMetadata"), None)
    if row is None:
        return None
    return {"completed": "completed", "failed": "failed", "skipped": "failed"}.get(row.state, "pending")


def stages_of(session: Session, card_pks: Sequence[int]) -> dict[int, list[StageView]]:
    """The stages of these cards, by card."""
    found: dict[int, list[StageView]] = {}
    if card_pks:
        query = select(CardStage.card_pk, *STAGE_COLUMNS).where(CardStage.card_pk.in_(card_pks))
        for card_pk, *columns in session.execute(query):
            found.setdefault(card_pk, []).append(StageView._make(columns))
    return found
