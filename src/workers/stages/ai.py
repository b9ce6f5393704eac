"""Running the ``ai`` stage: the card's text described by the offline engine or the configured
provider (its rules: cardvault.domain.pipeline.ai)."""

from __future__ import annotations

from cardvault.adapters import ai as engines
from cardvault.domain.models import Card
from cardvault.domain.pipeline import ai
from cardvault.domain.pipeline.errors import StageFailed, StageSkipped
from cardvault.services import Services


def run(services: Services, card: Card, _lease: str) -> dict[str, object]:
    """A summary, tags and the language of the card's text, by the offline engine or the
    configured provider."""
    config = services.settings
    if not config.ai:
        raise StageSkipped("AI_OFF")
    with services.database.transaction(write=False) as session:
        text = ai.text_of(card, ai.source_text(session, card.pk))
        existing = ai.account_tags(session, card.account_id) if config.ai_provider else []
    if not text:
        raise StageSkipped("NO_TEXT")
    try:
        if config.ai_provider is not None:
            described = engines.describe_with_provider(config.ai_provider, text, existing_tags=existing)
        else:
            described = engines.describe_offline(text)
    except engines.AiRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.transient) from None
    return {"described": described}
