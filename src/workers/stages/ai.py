"""The ``ai`` stage: a summary, tags and the language of the card's text, by the offline engine
or the configured provider."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cardvault.adapters import ai
from cardvault.domain.cards import ai as ai_rules
from cardvault.domain.models import Card
from cardvault.domain.processing import StageFailed, StageSkipped
from cardvault.workers.broker import database, settings

BASIS = ("content", "url", "file_object", "ai_transcript", "metadata_title")
WRITES_TAGS = True


def run(card: Card, _lease: str) -> dict[str, object]:
    """A summary, tags and the language of the card's text, by the offline engine or the
    configured provider."""
    config = settings()
    if not config.ai:
        raise StageSkipped("AI_OFF")
    with database().transaction(write=False) as session:
        text = ai_rules.text_of(card, ai_rules.source_text(session, card.pk))
        existing = ai_rules.account_tags(session, card.account_id) if config.ai_provider else []
    if not text:
        raise StageSkipped("NO_TEXT")
    try:
        if config.ai_provider is not None:
            described = ai.describe_with_provider(config.ai_provider, text, existing_tags=existing)
        else:
            described = ai.describe_offline(text)
    except ai.AiRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.transient) from None
    return {"described": described}


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the card's summary and its tags by the rules of cardvault.domain.cards.ai."""
    described = fields["described"]
    assert isinstance(described, ai.Described)
    ai_rules.apply(
        session,
        card,
        summary=described.summary,
        keywords=described.tags,
        engine={"kind": described.kind, "model": described.model, "language": described.language},
    )
