"""The ``media`` stage of an audio, video or document card: what the decoder's child reads of
its file (duration, waveform, poster, scrub strip; a document's preview, facts and text)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from cardvault.adapters.images import ImageRefused
from cardvault.domain.models import Card
from cardvault.domain.processing import StageFailed
from cardvault.workers.broker import blob_store, decoder
from cardvault.workers.stages import set_fields
from cardvault.workers.stages.pictures import store_pictures

BASIS = ("file_object",)
WRITES_TAGS = False


def _analyse(card: Card, *, subtitles: bool = False) -> tuple[dict[str, Any], list[bytes]]:
    """What the decoder's child reads of the card's file."""
    assert card.file_object is not None and card.file_kind is not None
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        blob_store().download(card.file_object, original)
        try:
            return decoder().media(
                original, file_kind=card.file_kind, mime_type=card.mime_type or "", subtitles=subtitles
            )
        except ImageRefused as refused:
            transient = refused.code == "DECODE_BUSY"
            raise StageFailed(refused.code, str(refused), transient=transient) from None


def run(card: Card, lease: str) -> dict[str, object]:
    """An audio file's duration and waveform; a video's duration, size, poster and scrub
    strip; a document's preview, facts and text."""
    facts, parts = _analyse(card)
    kind = card.file_kind
    if kind == "audio":
        return {
            "duration_ms": facts["durationMs"],
            "waveform": facts["waveform"],
            "file_preview": {"kind": "audio"},
        }
    if kind == "video":
        large, compact, placeholder, sprite = parts
        pictures = {"thumbnail_object": large, "compact_object": compact, "placeholder_object": placeholder}
        return {
            **store_pictures(card, lease, {**pictures, "scrub_object": sprite}),
            "duration_ms": facts["durationMs"],
            "file_width": facts["width"],
            "file_height": facts["height"],
            "scrub": facts["scrub"],
            "file_preview": {"kind": "video"},
        }
    fields: dict[str, object] = {
        "file_preview": {
            **facts["preview"],
            "kind": "source" if kind == "source" else facts["preview"]["kind"],
        },
        "source_text": facts["text"],
    }
    if parts:  # a PDF's first page
        large, compact, placeholder = parts
        pictures = {"thumbnail_object": large, "compact_object": compact, "placeholder_object": placeholder}
        fields.update(store_pictures(card, lease, pictures))
    return fields


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set what was read of the file."""
    set_fields(card, fields)
