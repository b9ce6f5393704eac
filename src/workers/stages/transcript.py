"""The ``transcript`` stage of an audio or video card: its subtitle track, else its caption
file, else the speech heard in it. Transcripts are searched."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.adapters import speech
from cardvault.adapters.images import ImageRefused
from cardvault.domain.models import Card
from cardvault.domain.processing import StageFailed, StageSkipped
from cardvault.domain.search.index import index_card
from cardvault.workers.broker import blob_store, database, decoder, settings, speech_decoder
from cardvault.workers.stages import Deferred, set_fields

BASIS = ("file_object", "captions_object")
WRITES_TAGS = False


# Another transcript waits at most SPEECH_WAIT (cardvault.domain.pipeline) for speech
# recognition, then gives its thread back and is sent again SPEECH_BUSY_DELAY_MS later, its
# attempt not counted: a long file never holds the threads every queue shares.
SPEECH_BUSY_DELAY_MS = 30_000


def run(card: Card, _lease: str) -> dict[str, object]:
    """An audio or video file's transcript: its subtitle track, else its caption file, else
    the speech heard in it (where speech recognition is installed and on). A caption file is
    used even when the file cannot be read."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        unreadable: StageFailed | None = None
        if card.file_object is not None:
            blob_store().download(card.file_object, original)
            try:
                facts, _ = decoder().media(
                    original, file_kind=card.file_kind or "", mime_type=card.mime_type or "", subtitles=True
                )
            except ImageRefused as refused:
                if refused.code == "DECODE_BUSY":
                    raise StageFailed(refused.code, str(refused), transient=True) from None
                unreadable = StageFailed(refused.code, str(refused))
            else:
                if facts["text"] is not None:
                    return {"ai_transcript": facts["text"], "transcript_source": "subtitles"}
        if card.captions_object is not None:
            with database().transaction(write=False) as session:
                text = session.scalar(select(Card.captions_text).where(Card.pk == card.pk))
            if text:
                return {"ai_transcript": text, "transcript_source": "captions"}
        if unreadable is not None:
            raise unreadable
        if card.file_object is None:
            raise StageSkipped("NO_MEDIA")
        if not (settings().speech and speech.installed()):
            raise StageSkipped("NO_TRANSCRIBER")
        try:
            heard = speech_decoder().speech(original, mime_type=card.mime_type or "")
        except ImageRefused as refused:
            if refused.code == "DECODE_BUSY":
                raise Deferred("DECODE_BUSY", SPEECH_BUSY_DELAY_MS) from None
            raise StageFailed(refused.code, str(refused)) from None
    if heard["text"] is None:
        raise StageSkipped("NO_SPEECH")
    return {"ai_transcript": heard["text"], "transcript_source": "speech"}


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the transcript and index it for search."""
    set_fields(card, fields)
    session.flush()
    index_card(session, card)
