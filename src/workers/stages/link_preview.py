"""The ``linkPreview`` stage of a link card: the page's image as the card's image, unless the
card's image was replaced."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlalchemy.orm import Session

from cardvault.domain import links
from cardvault.domain.models import Card
from cardvault.domain.processing import StageSkipped
from cardvault.workers.broker import fetcher, settings
from cardvault.workers.stages import set_fields
from cardvault.workers.stages.pictures import decode, store_renditions

BASIS = ("url",)
WRITES_TAGS = False


def run(card: Card, lease: str) -> dict[str, object]:
    """The page's image as the card's image (1200, 256 and 48 px), unless it was replaced."""
    image_url = (card.link_meta or {}).get("imageUrl")
    if not settings().fetch_links:
        raise StageSkipped("FETCHING_OFF")
    if card.thumbnail_overridden:
        raise StageSkipped("IMAGE_REPLACED")
    if not image_url:
        raise StageSkipped("NO_IMAGE")
    body = links.fetch_image(fetcher(), image_url)
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "image"
        original.write_bytes(body)
        made = decode(original, large=True)
    return store_renditions(card, made, lease, large=True)


def skipped_by(card: Card) -> str | None:
    """An image replaced meanwhile stays: the page's is skipped."""
    return "IMAGE_REPLACED" if card.thumbnail_overridden else None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the card's pictures."""
    set_fields(card, fields)
