"""Replacing a link card's image with an uploaded one, and resetting it.

The replacement is an upload issued for that card (``purpose`` thumbnail): JPEG, PNG, WebP, GIF
(its first frame) or AVIF by its bytes, under 20 MB, at most 10,000 px a side. It is decoded
in the decoder's child process into three WebP renditions (1200, 256 and 48 px), which become
the card's ``linkPreviewImageUrl``, ``compactUrl`` and ``placeholderUrl``; ``thumbnailOverridden``
keeps them through refreshes and new link previews until the image is reset."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.images import ImageRefused
from cardvault.domain.cards.attachments import Attachment
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidInput, ServiceBusy, UnsupportedType
from cardvault.domain.files import filetypes, held, uploads
from cardvault.domain.models import Card
from cardvault.domain.pipeline import processing
from cardvault.domain.pipeline.processing import Written

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp", "image/avif")
MAX_BYTES = filetypes.MAX_BYTES["image"]


@dataclasses.dataclass(frozen=True)
class Replacement:
    """An uploaded image made into the renditions a link card shows."""

    upload_id: str
    large: str  # object keys
    compact: str
    placeholder: str
    sizes: dict[str, int]  # each rendition's bytes, by the card's column for it

    @property
    def keys(self) -> list[str]:
        return [self.large, self.compact, self.placeholder]


def _keys(account_id: str, card_id: str, upload_id: str) -> tuple[str, str, str]:
    return uploads.replacement_keys(account_id=account_id, card_id=card_id, upload_id=upload_id)


IMAGE = Attachment(
    purpose="thumbnail",
    card_types=("link",),
    only="Only a link card's image can be replaced",
    declared_types=IMAGE_TYPES,
    refusal="{mime_type} is not an accepted image type: JPEG, PNG, WebP, GIF or AVIF.",
    max_bytes=MAX_BYTES,
    kept_key=lambda card, upload_id: _keys(card.account_id, card.id, upload_id)[0],
    held_key=lambda card: card.thumbnail_object,
)
issue_upload = IMAGE.issue_upload


def check(
    session: Session, store: BlobStore, *, account_id: str, card_id: str, file_key: str
) -> uploads.CheckedUpload | Card:
    """Check the card and its upload: the checked upload, or the card itself when this upload
    is already its image (a repeated PUT)."""
    checked = IMAGE.check(session, store, account_id=account_id, card_id=card_id, file_key=file_key)
    if isinstance(checked, uploads.CheckedUpload) and checked.file_type.mime_type not in IMAGE_TYPES:
        raise UnsupportedType(
            "The file is not an accepted image (JPEG, PNG, WebP, GIF or AVIF), judged by its bytes.",
            detected=checked.file_type.card_type,
        )
    return checked


def render(
    store: BlobStore, decoder: Decoder, checked: uploads.CheckedUpload, *, card_id: str
) -> Replacement:
    """Decode the uploaded image in the decoder's child and store its renditions."""
    upload = checked.upload
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "image"
        store.download(upload.object_key, original)
        try:
            made = decoder.renditions(original, large=True)
        except ImageRefused as refused:
            if refused.code == "DECODE_BUSY":  # other images hold the decoder: retry in a moment
                raise ServiceBusy() from None
            raise InvalidInput(
                f"The image cannot be used: {refused}", details={"reason": refused.code}
            ) from None
    large, compact, placeholder = _keys(upload.account_id, card_id, upload.id)
    assert made.large is not None
    store.put(large, made.large, content_type="image/webp")
    store.put(compact, made.compact, content_type="image/webp")
    store.put(placeholder, made.placeholder, content_type="image/webp")
    sizes = {
        "thumbnail_object": len(made.large),
        "compact_object": len(made.compact),
        "placeholder_object": len(made.placeholder),
    }
    return Replacement(
        upload_id=upload.id, large=large, compact=compact, placeholder=placeholder, sizes=sizes
    )


def apply(session: Session, *, account_id: str, card_id: str, replacement: Replacement) -> Written:
    """Make the renditions the card's image (the old ones are doomed by the database); it
    queues no stage."""
    card = IMAGE.card(session, account_id=account_id, card_id=card_id, for_update=True)
    upload = uploads.mark_taken(session, account_id=account_id, file_key=replacement.upload_id)
    card.thumbnail_object = replacement.large
    card.compact_object = replacement.compact
    card.placeholder_object = replacement.placeholder
    card.thumbnail_overridden = True
    card.updated_at = now_ms()
    held.recount(session, card, replacement.sizes, pending=-upload.declared_size)
    return Written(card)


def reset(session: Session, *, account_id: str, card_id: str) -> Written:
    """Drop a replaced image: the card shows its page's image again, once its ``linkPreview``
    stage (queued here) made it. Resetting a card whose image was not replaced changes
    nothing."""
    card = IMAGE.card(session, account_id=account_id, card_id=card_id, for_update=True)
    if not card.thumbnail_overridden:
        return Written(card)
    card.thumbnail_object = card.compact_object = card.placeholder_object = None
    card.thumbnail_overridden = False
    card.updated_at = now_ms()
    queued = processing.queue(session, card, ["linkPreview"]) if card.url else ()
    held.recount(session, card)
    return Written(card, queued)
