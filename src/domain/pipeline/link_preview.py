"""The ``linkPreview`` stage's rules: the page's image as a link card's image (1200, 256 and
48 px), unless the card's image was replaced."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cardvault.adapters.fetcher import Fetcher
from cardvault.domain.models import Card
from cardvault.domain.pipeline.errors import StageSkipped
from cardvault.domain.pipeline.link_metadata import HEADERS, fetch
from cardvault.domain.pipeline.results import set_fields

BASIS = ("url",)
WRITES_TAGS = False
IMAGE_BYTES = 20 * 1024 * 1024  # a page's image over this is not fetched
_IMAGE_HEADERS = {**HEADERS, "Accept": "image/avif,image/webp,image/png,image/jpeg,image/*;q=0.8"}


def image_url(card: Card) -> str:
    """The address of the image the card's page names; StageSkipped when the card's image was
    replaced or the page names none."""
    found = (card.link_meta or {}).get("imageUrl")
    if card.thumbnail_overridden:
        raise StageSkipped("IMAGE_REPLACED")
    if not found:
        raise StageSkipped("NO_IMAGE")
    return str(found)


def fetch_image(fetcher: Fetcher, url: str) -> bytes:
    """Fetch a page's image (its bytes are checked by the decoder, not trusted here)."""
    return fetch(fetcher, url, max_bytes=IMAGE_BYTES, truncate=False, headers=_IMAGE_HEADERS).body


def skipped_by(card: Card) -> str | None:
    """An image replaced meanwhile stays: the page's is skipped."""
    return "IMAGE_REPLACED" if card.thumbnail_overridden else None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the card's pictures."""
    set_fields(card, fields)
