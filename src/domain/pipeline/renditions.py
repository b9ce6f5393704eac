"""The ``renditions`` stage's rules: what an image card keeps of its decoded image (its 1200 px,
256 px and 48 px WebP, its size, its preview and its main colours)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.images import Renditions
from cardvault.domain.models import Card
from cardvault.domain.pipeline.results import set_fields, store_renditions

BASIS = ("file_object",)
WRITES_TAGS = False


def fields_of(blobs: BlobStore, card: Card, lease: str, made: Renditions) -> dict[str, object]:
    """The image's pictures (stored), size, preview and main colours."""
    return {
        **store_renditions(blobs, card, made, lease, large=True),
        "file_width": made.width,
        "file_height": made.height,
        "file_preview": {"kind": "image", "excerpt": None, "pageCount": None, "animated": made.animated},
        "colors": list(made.colors),
    }


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the card's pictures, size, preview and colours."""
    set_fields(card, fields)
