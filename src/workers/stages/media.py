"""Running the ``media`` stage of an audio, video or document card: its file, read by the
decoder's child (its rules: cardvault.domain.pipeline.media)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from cardvault.adapters.images import ImageRefused
from cardvault.domain.models import Card
from cardvault.domain.pipeline import media
from cardvault.domain.pipeline.errors import StageFailed
from cardvault.services import Services


def _analyse(
    services: Services, card: Card, *, subtitles: bool = False
) -> tuple[dict[str, Any], list[bytes]]:
    """What the decoder's child reads of the card's file."""
    assert card.file_object is not None and card.file_kind is not None
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        services.blobs.download(card.file_object, original)
        try:
            return services.decoder.media(
                original, file_kind=card.file_kind, mime_type=card.mime_type or "", subtitles=subtitles
            )
        except ImageRefused as refused:
            transient = refused.code == "DECODE_BUSY"
            raise StageFailed(refused.code, str(refused), transient=transient) from None


def run(services: Services, card: Card, lease: str) -> dict[str, object]:
    """An audio file's duration and waveform; a video's duration, size, poster and scrub
    strip; a document's preview, facts and text."""
    facts, parts = _analyse(services, card)
    return media.fields_of(services.blobs, card, lease, facts, parts)
