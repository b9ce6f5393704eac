"""Each stage's rules by its row's name: what its result derives from, whether it writes tags,
when the card as it is then refuses the result, and how the result is written into the card
(the stage's module in this package). How a stage is run is cardvault.workers.stages'."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from sqlalchemy.orm import Session

from cardvault.domain.models import Card
from cardvault.domain.pipeline import (
    ai,
    capture,
    link_metadata,
    link_preview,
    media,
    ocr,
    renditions,
    transcript,
)


class StageRules(Protocol):
    """A stage's module of rules."""

    @property
    def BASIS(self) -> tuple[str, ...]:
        """The card fields its result derives from (the file, the URL): a result made from an
        old value is dropped."""

    @property
    def WRITES_TAGS(self) -> bool:
        """Its result changes the card's tags (the tag lock is taken before the card)."""

    def skipped_by(self, card: Card) -> str | None:
        """The code the result is skipped with when the card, as it is when the result is
        recorded, must not take it (None: it takes it)."""

    def apply(self, session: Session, card: Card, fields: dict[str, object]) -> None:
        """Write the result into the card, in the transaction that records the stage as completed."""


RULES: Mapping[str, StageRules] = {
    "linkMetadata": link_metadata,
    "linkPreview": link_preview,
    "capture": capture,
    "renditions": renditions,
    "media": media,
    "transcript": transcript,
    "ocr": ocr,
    "ai": ai,
}
