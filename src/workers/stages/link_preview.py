"""Running the ``linkPreview`` stage of a link card: the page's image, fetched and decoded (its
rules: cardvault.domain.pipeline.link_preview)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cardvault.domain.models import Card
from cardvault.domain.pipeline import link_preview
from cardvault.domain.pipeline.errors import StageSkipped
from cardvault.domain.pipeline.results import store_renditions
from cardvault.services import Services
from cardvault.workers.stages.pictures import decode


def run(services: Services, card: Card, lease: str) -> dict[str, object]:
    """The page's image as the card's image (1200, 256 and 48 px), unless it was replaced."""
    if not services.settings.fetch_links:
        raise StageSkipped("FETCHING_OFF")
    body = link_preview.fetch_image(services.fetcher, link_preview.image_url(card))
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "image"
        original.write_bytes(body)
        made = decode(services, original, large=True)
    return store_renditions(services.blobs, card, made, lease, large=True)
