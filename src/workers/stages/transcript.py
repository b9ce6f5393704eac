"""Running the ``transcript`` stage of an audio or video card: its subtitle track read by the
decoder's child, else its caption file, else speech recognition in a child of its own (its
rules: cardvault.domain.pipeline.transcript)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cardvault.adapters import speech
from cardvault.adapters.images import ImageRefused
from cardvault.domain.models import Card
from cardvault.domain.pipeline import transcript
from cardvault.domain.pipeline.errors import Deferred, StageFailed, StageSkipped
from cardvault.services import Services

# Another transcript waits at most SPEECH_WAIT (cardvault.domain.pipeline.table) for speech
# recognition, then gives its thread back and is sent again SPEECH_BUSY_DELAY_MS later, its
# attempt not counted: a long file never holds the threads every queue shares.
SPEECH_BUSY_DELAY_MS = 30_000


def run(services: Services, card: Card, _lease: str) -> dict[str, object]:
    """An audio or video file's transcript: its subtitle track, else its caption file, else
    the speech heard in it (where speech recognition is installed and on). A caption file is
    used even when the file cannot be read."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        unreadable: StageFailed | None = None
        if card.file_object is not None:
            services.blobs.download(card.file_object, original)
            try:
                facts, _ = services.decoder.media(
                    original, file_kind=card.file_kind or "", mime_type=card.mime_type or "", subtitles=True
                )
            except ImageRefused as refused:
                if refused.code == "DECODE_BUSY":
                    raise StageFailed(refused.code, str(refused), transient=True) from None
                unreadable = StageFailed(refused.code, str(refused))
            else:
                if facts["text"] is not None:
                    return transcript.heard(facts["text"], "subtitles")
        if card.captions_object is not None:
            with services.database.transaction(write=False) as session:
                text = transcript.captions_text(session, card.pk)
            if text:
                return transcript.heard(text, "captions")
        if unreadable is not None:
            raise unreadable
        if card.file_object is None:
            raise StageSkipped("NO_MEDIA")
        if not (services.settings.speech and speech.installed()):
            raise StageSkipped("NO_TRANSCRIBER")
        try:
            heard = services.speech.speech(original, mime_type=card.mime_type or "")
        except ImageRefused as refused:
            if refused.code == "DECODE_BUSY":
                raise Deferred("DECODE_BUSY", SPEECH_BUSY_DELAY_MS) from None
            raise StageFailed(refused.code, str(refused)) from None
    if heard["text"] is None:
        raise StageSkipped("NO_SPEECH")
    return transcript.heard(heard["text"], "speech")
