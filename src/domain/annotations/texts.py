"""Which text of a card its annotations are placed in: its own (text and quote cards), its
page's (a link: the capture's reader view or the fetched text, cardvault.domain.pipeline), a
document's extracted text, or an audio or video card's transcript."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.models import Card

# The text each card type is annotated in (the spec's AnnotationSource); other types have none.
SOURCES = {
    "text": "text",
    "quote": "text",
    "link": "page",
    "document": "document",
    "audio": "transcript",
    "video": "transcript",
}


class CardText(NamedTuple):
    source: str
    text: str | None  # None: not known yet (a page not read, a file not decoded)


def text_of(session: Session, card: Card) -> CardText | None:
    """The card's annotated text, or None for a card type that has none (images, palettes)."""
    source = SOURCES.get(card.type)
    if source is None:
        return None
    if source == "text":
        return CardText(source, card.content)
    if source == "transcript":
        return CardText(source, card.ai_transcript or None)
    # source_text is deferred: read the column alone rather than load the card's other texts.
    found = session.scalar(select(Card.source_text).where(Card.pk == card.pk))
    return CardText(source, found or None)
