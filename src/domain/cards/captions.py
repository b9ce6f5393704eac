"""An audio or video card's caption file: the transcript stage's source when the file itself
has no subtitle track (cardvault.domain.pipeline.transcript).

The file is an upload issued for that card (``purpose`` captions), at most MAX_BYTES: WebVTT or
SubRip by its bytes (UTF-8, a byte order mark allowed). Its cues are read in the decoder's child
process (FFmpeg's demuxers, with the limits of every decode) when it is attached, so a file that
cannot be read is refused then; the card keeps the file as uploaded, what it is, and its cues'
text. Attaching, replacing or removing it clears what the pipeline wrote from the card's text
(AI summary, AI tags, transcript) and runs ``transcript`` and ``ai`` again."""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore, ObjectChanged
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.images import ImageRefused
from cardvault.domain.cards.attachments import Attachment
from cardvault.domain.cards.editing import forget_ai
from cardvault.domain.clock import now_ms
from cardvault.domain.db import lock_tags
from cardvault.domain.errors import (
    InvalidInput,
    ServiceBusy,
    UnsupportedType,
    UploadChanged,
)
from cardvault.domain.files import held, uploads
from cardvault.domain.models import Card
from cardvault.domain.pipeline import processing
from cardvault.domain.pipeline.processing import Written

CAPTION_TYPES = ("text/vtt", "application/x-subrip", "text/srt", "text/plain")
MAX_BYTES = 5_000_000
CONTENT_TYPES = {"vtt": "text/vtt", "srt": "application/x-subrip"}
_SRT_START = re.compile(
    rb"\A(?:[ \t]*\r?\n){0,8}[ \t]*\d{1,9}[ \t]*\r?\n[ \t]*\d{1,4}:\d{2}:\d{2}[,.]\d{1,3}[ \t]*-->"
)
_VTT_START = re.compile(rb"\AWEBVTT(?:[ \t\r\n]|\Z)")


@dataclasses.dataclass(frozen=True)
class Attached:
    """A caption file read and kept where its card will hold it."""

    upload_id: str
    object_key: str
    file_name: str
    caption_format: str  # vtt or srt
    size: int
    cue_count: int
    text: str


def caption_format(head: bytes) -> str | None:
    """``vtt`` or ``srt`` by a file's first bytes, or None."""
    head = head.removeprefix(b"\xef\xbb\xbf")
    if _VTT_START.match(head):
        return "vtt"
    if _SRT_START.match(head):
        return "srt"
    return None


CAPTIONS = Attachment(
    purpose="captions",
    card_types=("audio", "video"),
    only="Only an audio or video card takes a caption file",
    declared_types=CAPTION_TYPES,
    refusal="{mime_type} is not a caption type: text/vtt, application/x-subrip, text/srt or text/plain.",
    max_bytes=MAX_BYTES,
    kept_key=lambda card, upload_id: uploads.captions_key(
        account_id=card.account_id, card_id=card.id, upload_id=upload_id
    ),
    held_key=lambda card: card.captions_object,
)
issue_upload = CAPTIONS.issue_upload


def check(
    session: Session, store: BlobStore, *, account_id: str, card_id: str, file_key: str
) -> tuple[uploads.CheckedUpload, str] | Card:
    """Check the card and its upload: the checked upload and its format, or the card itself
    when this upload is already its caption file (a repeated PUT)."""
    checked = CAPTIONS.check(session, store, account_id=account_id, card_id=card_id, file_key=file_key)
    if isinstance(checked, Card):
        return checked
    found = caption_format(checked.head)
    if found is None:
        raise UnsupportedType(
            "The file is not WebVTT or SubRip captions, judged by its bytes.",
            detected=checked.file_type.card_type,
        )
    return checked, found


def read(
    store: BlobStore, decoder: Decoder, checked: uploads.CheckedUpload, found: str, *, card_id: str
) -> Attached:
    """Read the file's cues in the decoder's child and keep the file where the card holds it."""
    upload = checked.upload
    key = uploads.captions_key(account_id=upload.account_id, card_id=card_id, upload_id=upload.id)
    try:  # the copy the ETag names is what is read and kept (a second PUT cannot part them)
        store.copy(upload.object_key, key, etag=checked.stored.etag)
    except ObjectChanged:
        raise UploadChanged("The stored file changed while it was read; try again.") from None
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / f"captions.{found}"
        store.download(key, original)
        try:
            facts = decoder.captions(original, caption_format=found)
        except ImageRefused as refused:
            if refused.code == "DECODE_BUSY":
                raise ServiceBusy() from None
            raise InvalidInput(
                f"The caption file cannot be used: {refused}", details={"reason": "CAPTIONS_UNREADABLE"}
            ) from None
    if not facts.get("text"):
        raise InvalidInput(
            "The caption file cannot be used: it has no cue with text.", details={"reason": "CAPTIONS_EMPTY"}
        )
    return Attached(
        upload_id=upload.id,
        object_key=key,
        file_name=upload.file_name,
        caption_format=found,
        size=checked.stored.size,
        cue_count=int(facts["cues"]),
        text=str(facts["text"]),
    )


def apply(session: Session, *, account_id: str, card_id: str, attached: Attached) -> Written:
    """Make the file the card's caption file (the one before is doomed by the database) and run
    its transcript again."""
    lock_tags(session, account_id=account_id)  # before the card: its AI tags go
    card = CAPTIONS.card(session, account_id=account_id, card_id=card_id, for_update=True)
    upload = uploads.mark_taken(session, account_id=account_id, file_key=attached.upload_id)
    card.captions_object = attached.object_key
    card.captions = {
        "fileName": attached.file_name,
        "format": attached.caption_format,
        "size": attached.size,
        "cueCount": attached.cue_count,
    }
    card.captions_text = attached.text
    edited = _transcribe_again(session, card)
    # After the tag counters its AI tags moved (the lock order in cardvault.domain.db): the
    # upload leaves the pending bytes, the file (the one before leaving) joins the stored ones.
    held.recount(session, card, {"captions_object": attached.size}, pending=-upload.declared_size)
    return edited


def remove(session: Session, *, account_id: str, card_id: str) -> Written:
    """Remove the card's caption file (the database dooms it) and run its transcript again; a
    card without one is left as it is."""
    lock_tags(session, account_id=account_id)
    card = CAPTIONS.card(session, account_id=account_id, card_id=card_id, for_update=True)
    if card.captions_object is None:
        return Written(card)
    card.captions_object = card.captions = card.captions_text = None
    edited = _transcribe_again(session, card)
    held.recount(session, card)
    return edited


def _transcribe_again(session: Session, card: Card) -> Written:
    forget_ai(session, card)
    card.updated_at = max(now_ms(), card.updated_at)
    return Written(card, processing.queue(session, card, ["transcript", "ai"]))
