"""The ``capture`` stage's rules: what is kept of a link card's page as a browser drew it
(cardvault.adapters.capture): the first screen (1280 x 800 WebP) with 256 px and 48 px
renditions, the page as MHTML, and its reader view (Markdown), whose plain text becomes the text
the AI stage reads. Which outputs are kept is a setting; the screenshot always is. Each is stored
under a name of the attempt's own (its lease), as the pictures are."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.capture import Shot
from cardvault.adapters.images import Renditions
from cardvault.adapters.pages.main_text import reader
from cardvault.domain.annotations.placing import place_again
from cardvault.domain.clock import now_ms
from cardvault.domain.models import Card
from cardvault.domain.pipeline.results import SIZES, set_fields, store_pictures

BASIS = ("url",)
WRITES_TAGS = False
ARCHIVE_TYPE = "multipart/related"  # MHTML, as Chromium writes it
READER_TYPE = "text/markdown; charset=utf-8"
TEXT_KEEP = 20_000  # of the reader's text, the part the AI stage reads (as a page's)


def keep(
    blobs: BlobStore, card: Card, lease: str, shot: Shot, made: Renditions, outputs: tuple[str, ...]
) -> dict[str, object]:
    """Store what is kept of the capture (``made``: its screenshot's renditions) and answer the
    card's fields for it."""
    fields = store_pictures(
        blobs,
        card,
        lease,
        {
            "screenshot_object": shot.screenshot,
            "screenshot_compact_object": made.compact,
            "screenshot_placeholder_object": made.placeholder,
        },
    )
    facts: dict[str, object] = {"capturedAt": now_ms(), "finalUrl": shot.final_url}
    sizes: dict[str, int] = fields[SIZES]  # type: ignore[assignment]  # (store_pictures')
    base = f"accounts/{card.account_id}/captures/{card.id}/{lease}"
    if "archive" in outputs and shot.archive is not None:
        fields["archive_object"] = f"{base}-page.mhtml"
        blobs.put(str(fields["archive_object"]), shot.archive, content_type=ARCHIVE_TYPE)
        facts["archive"] = {"size": len(shot.archive)}
        sizes["archive_object"] = len(shot.archive)
    elif "archive" in outputs:
        facts["archiveOmitted"] = shot.archive_omitted
    read = reader(shot.html, shot.final_url) if "reader" in outputs else None
    if read is not None:
        markdown, text = read
        body = markdown.encode()
        fields["reader_object"] = f"{base}-reader.md"
        blobs.put(str(fields["reader_object"]), body, content_type=READER_TYPE)
        facts["reader"] = {"size": len(body), "wordCount": len(text.split())}
        sizes["reader_object"] = len(body)
        fields["source_text"] = text[:TEXT_KEEP]
    fields["capture"] = facts
    return fields


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Keep the capture in the card: the objects it does not hold any longer (an earlier
    capture's, or an output turned off since) are doomed by the database."""
    kept = {"archive_object": None, "reader_object": None, **fields}
    set_fields(card, kept)
    place_again(session, card)  # in the reader view's text, when it has one
