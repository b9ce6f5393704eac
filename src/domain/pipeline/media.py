"""The ``media`` stage's rules: what an audio, video or document card keeps of what the decoder's
child read of its file (duration, waveform, poster, scrub strip; a document's preview, facts and
text)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.domain.annotations.placing import place_again
from cardvault.domain.models import Card
from cardvault.domain.pipeline.results import set_fields, store_pictures

BASIS = ("file_object",)
WRITES_TAGS = False


def fields_of(
    blobs: BlobStore, card: Card, lease: str, facts: dict[str, Any], parts: list[bytes]
) -> dict[str, object]:
    """An audio file's duration and waveform; a video's duration, size, poster and scrub
    strip (stored); a document's preview, facts and text (and its first page's pictures)."""
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
            **store_pictures(blobs, card, lease, {**pictures, "scrub_object": sprite}),
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
        fields.update(store_pictures(blobs, card, lease, pictures))
    return fields


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set what was read of the file, and place the card's annotations in its text."""
    set_fields(card, fields)
    place_again(session, card)
