"""The ``transcript`` stage's rules: an audio or video card's transcript is its subtitle track,
else its caption file, else the speech heard in it (``SOURCES``, in that order); a caption file
is used even when the file cannot be read. Transcripts are searched."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.annotations.placing import place_again
from cardvault.domain.models import Card
from cardvault.domain.pipeline.results import set_fields
from cardvault.domain.search.index import index_card

BASIS = ("file_object", "captions_object")
WRITES_TAGS = False
SOURCES = ("subtitles", "captions", "speech")  # where a transcript comes from, first found first


def heard(text: str, source: str) -> dict[str, object]:
    """The result of a transcript found in ``source``."""
    assert source in SOURCES
    return {"ai_transcript": text, "transcript_source": source}


def captions_text(session: Session, card_pk: int) -> str | None:
    """The text of the card's caption file's cues (kept apart from the card's other columns)."""
    return session.scalar(select(Card.captions_text).where(Card.pk == card_pk))


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the transcript and index it for search; place the card's annotations in it."""
    set_fields(card, fields)
    place_again(session, card)
    session.flush()
    index_card(session, card)
