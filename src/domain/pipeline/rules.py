"""Each stage's rules by its row's name: what its result derives from, whether it writes tags,
when the card as it is then refuses the result, and how the result is written into the card
(the stage's module in this package); for the few stages that need them, what their result
derives from on one card type (``basis``) and what a skip clears (``forget_skipped``). How a
stage is run is cardvault.workers.stages'."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
        old value is dropped (on every card type, unless ``basis`` below says otherwise)."""

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
# Stages whose result derives from other fields on some card types than their BASIS says.
_BASIS_BY_TYPE: Mapping[str, Callable[[str], tuple[str, ...]]] = {"ai": ai.basis}
# Stages that clear what an earlier run wrote when a later run is skipped (the spec says the
# field is null when the stage was skipped); the others' skips change no card field.
_FORGETS: Mapping[str, Callable[[Session, Card], None]] = {"ocr": ocr.forget}


def basis(stage: str, card_type: str) -> tuple[str, ...]:
    """The card fields the stage's result for a card of this type derives from."""
    of_type = _BASIS_BY_TYPE.get(stage)
    return of_type(card_type) if of_type is not None else RULES[stage].BASIS


def forget_skipped(session: Session, stage: str, card: Card) -> None:
    """The stage was skipped on this run: clear what an earlier run of it left on the card (the
    caller holds the card's row, in the transaction that settles the stage)."""
    forget = _FORGETS.get(stage)
    if forget is not None:
        forget(session, card)
