"""The ``ocr`` stage's rules: which picture of a card is read (an image card's file, a PDF's
pages without a text layer, a link's screenshot when its page gave no text), and how the words
read are kept: ``fileText`` (at most 256 KiB, in reading order), with the engine and languages
that read them; a skipped run clears them (``forget``). The words are searched like the body,
and the AI stage of an image or a document reads them."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from cardvault.domain.models import Card
from cardvault.domain.pipeline.results import set_fields
from cardvault.domain.search.index import index_card

BASIS = ("file_object", "screenshot_object")
WRITES_TAGS = False


def picture_of(card: Card, page_text: str | None) -> tuple[str, str] | str:
    """What to read, as (``image`` or ``pdf``, its stored object); else the code the stage is
    skipped with: ``HAS_TEXT`` (the page or document has text of its own), ``NO_PICTURE``
    (nothing to read: a document that is not a PDF, a link without a screenshot)."""
    if card.type == "image" and card.file_object is not None:
        return ("image", card.file_object)
    if card.type == "document" and card.file_object is not None:
        if card.file_kind == "pdf":
            return ("pdf", card.file_object)
        return "HAS_TEXT" if (page_text or "").strip() else "NO_PICTURE"
    if card.type == "link":
        if (page_text or "").strip():
            return "HAS_TEXT"
        if card.screenshot_object is not None:
            return ("image", card.screenshot_object)
    return "NO_PICTURE"


def read(text: str, *, engine: str, languages: tuple[str, ...], pages: int) -> dict[str, object]:
    """The stage's result: the text read, and what read it."""
    facts: dict[str, Any] = {"engine": engine, "languages": list(languages), "pages": pages}
    return {"file_text": text, "ocr_facts": facts}


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the words read and index them for search."""
    set_fields(card, fields)
    session.flush()
    index_card(session, card)


def forget(session: Session, card: Card) -> None:
    """The stage was skipped on this run (OCR off, the page has text, nothing to read): the card
    keeps no words an earlier run read (``fileText`` is null when the stage was skipped), and
    search no longer finds them."""
    if card.file_text is None and card.ocr_facts is None:
        return
    card.file_text = card.ocr_facts = None
    session.flush()
    index_card(session, card)
