"""The ``capture`` stage of a link card: its page drawn by this process's capture browser
(cardvault.adapters.capture), and what is kept of it: the first screen (1280 x 800 WebP) with
256 px and 48 px renditions, the page as MHTML, and its reader view (Markdown), whose plain
text becomes the text the AI stage reads. Which outputs are kept is a setting; the screenshot
always is.

It waits at most CAPTURE_WAIT for one of the process's capture slots; when none comes free the
attempt is given back (CAPTURE_BUSY, not counted) and the stage is sent again CAPTURE_RETRY_MS
later, so a queue of captures never holds a worker thread waiting."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlalchemy.orm import Session

from cardvault.adapters.capture import CaptureBusy, CaptureRefused, Shot
from cardvault.adapters.pages.main_text import reader
from cardvault.domain.clock import now_ms
from cardvault.domain.files import held
from cardvault.domain.models import Card
from cardvault.domain.pipeline import CAPTURE_RETRY_MS, CAPTURE_WAIT
from cardvault.domain.processing import StageFailed, StageSkipped
from cardvault.workers.broker import blob_store, capture_browser, settings
from cardvault.workers.stages import Deferred, set_fields
from cardvault.workers.stages.pictures import decode, store_pictures

BASIS = ("url",)
WRITES_TAGS = False
ARCHIVE_TYPE = "multipart/related"  # MHTML, as Chromium writes it
READER_TYPE = "text/markdown; charset=utf-8"
TEXT_KEEP = 20_000  # of the reader's text, the part the AI stage reads (as a page's)


def run(card: Card, lease: str) -> dict[str, object]:
    """Capture the card's page and store what is kept of it."""
    assert card.url is not None
    config = settings()
    if not config.fetch_links:
        raise StageSkipped("FETCHING_OFF")
    if not config.capture.enabled:
        raise StageSkipped("CAPTURE_OFF")
    browser = capture_browser()
    if browser is None:
        raise StageSkipped("NO_BROWSER")
    try:
        shot = browser.capture(card.url, wait=CAPTURE_WAIT)
    except CaptureBusy:
        raise Deferred("CAPTURE_BUSY", CAPTURE_RETRY_MS) from None
    except CaptureRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.transient) from None
    return _store(card, lease, shot, config.capture.outputs)


def _store(card: Card, lease: str, shot: Shot, outputs: tuple[str, ...]) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        picture = Path(workdir) / "screenshot.webp"
        picture.write_bytes(shot.screenshot)
        made = decode(picture, large=False)
    fields = store_pictures(
        card,
        lease,
        {
            "screenshot_object": shot.screenshot,
            "screenshot_compact_object": made.compact,
            "screenshot_placeholder_object": made.placeholder,
        },
    )
    facts: dict[str, object] = {"capturedAt": now_ms(), "finalUrl": shot.final_url}
    sizes: dict[str, int] = fields[held.SIZES]  # type: ignore[assignment]  # (store_pictures')
    base = f"accounts/{card.account_id}/captures/{card.id}/{lease}"
    if "archive" in outputs and shot.archive is not None:
        fields["archive_object"] = f"{base}-page.mhtml"
        blob_store().put(str(fields["archive_object"]), shot.archive, content_type=ARCHIVE_TYPE)
        facts["archive"] = {"size": len(shot.archive)}
        sizes["archive_object"] = len(shot.archive)
    elif "archive" in outputs:
        facts["archiveOmitted"] = shot.archive_omitted
    read = reader(shot.html, shot.final_url) if "reader" in outputs else None
    if read is not None:
        markdown, text = read
        body = markdown.encode()
        fields["reader_object"] = f"{base}-reader.md"
        blob_store().put(str(fields["reader_object"]), body, content_type=READER_TYPE)
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
