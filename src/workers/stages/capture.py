"""Running the ``capture`` stage of a link card: its page drawn by this process's capture
browser (cardvault.adapters.capture); what is kept of it is the stage's rules'
(cardvault.domain.pipeline.capture).

It waits at most CAPTURE_WAIT for one of the process's capture slots; when none comes free the
attempt is given back (CAPTURE_BUSY, not counted) and the stage is sent again CAPTURE_RETRY_MS
later, so a queue of captures never holds a worker thread waiting."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cardvault.adapters.capture import CaptureBusy, CaptureRefused
from cardvault.domain.models import Card
from cardvault.domain.pipeline import capture
from cardvault.domain.pipeline.errors import Deferred, StageFailed, StageSkipped
from cardvault.domain.pipeline.table import CAPTURE_RETRY_MS, CAPTURE_WAIT
from cardvault.services import Services
from cardvault.workers.stages.pictures import decode


def run(services: Services, card: Card, lease: str) -> dict[str, object]:
    """Capture the card's page and store what is kept of it."""
    assert card.url is not None
    config = services.settings
    if not config.fetch_links:
        raise StageSkipped("FETCHING_OFF")
    if not config.capture.enabled:
        raise StageSkipped("CAPTURE_OFF")
    browser = services.capture_browser()
    if browser is None:
        raise StageSkipped("NO_BROWSER")
    try:
        shot = browser.capture(card.url, wait=CAPTURE_WAIT)
    except CaptureBusy:
        raise Deferred("CAPTURE_BUSY", CAPTURE_RETRY_MS) from None
    except CaptureRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.transient) from None
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        picture = Path(workdir) / "screenshot.webp"
        picture.write_bytes(shot.screenshot)
        made = decode(services, picture, large=False)
    return capture.keep(services.blobs, card, lease, shot, made, config.capture.outputs)
