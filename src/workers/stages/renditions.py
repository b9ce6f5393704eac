"""The ``renditions`` stage of an image card: its 256 px and 48 px WebP, its size, its preview
and its main colours."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlalchemy.orm import Session

from cardvault.domain.models import Card
from cardvault.workers.broker import blob_store
from cardvault.workers.stages import set_fields
from cardvault.workers.stages.pictures import decode, store_renditions

BASIS = ("file_object",)
WRITES_TAGS = False


def run(card: Card, lease: str) -> dict[str, object]:
    """An image card's 1200 px, 256 px and 48 px WebP, its size, its preview and its main
    colours."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        assert card.file_object is not None
        blob_store().download(card.file_object, original)
        made = decode(original, large=True)
    return {
        **store_renditions(card, made, lease, large=True),
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
