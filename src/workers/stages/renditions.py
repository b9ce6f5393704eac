"""Running the ``renditions`` stage of an image card: its file, decoded (its rules:
cardvault.domain.pipeline.renditions)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cardvault.domain.models import Card
from cardvault.domain.pipeline import renditions
from cardvault.services import Services
from cardvault.workers.stages.pictures import decode


def run(services: Services, card: Card, lease: str) -> dict[str, object]:
    """An image card's 1200 px, 256 px and 48 px WebP, its size, its preview and its main
    colours."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        assert card.file_object is not None
        services.blobs.download(card.file_object, original)
        made = decode(services, original, large=True)
    return renditions.fields_of(services.blobs, card, lease, made)
