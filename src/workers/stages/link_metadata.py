"""Running the ``linkMetadata`` stage of a link card: its page, fetched (its rules:
cardvault.domain.pipeline.link_metadata)."""

from __future__ import annotations

from cardvault.domain.models import Card
from cardvault.domain.pipeline import link_metadata
from cardvault.domain.pipeline.errors import StageSkipped
from cardvault.services import Services


def run(services: Services, card: Card, _lease: str) -> dict[str, object]:
    """What the link's page says."""
    assert card.url is not None
    if not services.settings.fetch_links:
        raise StageSkipped("FETCHING_OFF")
    return {"page": link_metadata.fetch_page(services.fetcher, card.url)}
