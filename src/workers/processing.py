"""The processing pipeline's actor: one message runs one stage of one card. The stage's row is
the truth (cardvault.domain.processing): a message for a stage that is done, failed, or taken by
a live worker does nothing, and the sweeper re-sends stages whose worker went quiet.

A stage that fails for a reason that may pass (the blob store out of reach) raises, and Dramatiq
retries it with backoff; one that fails because of the file (a broken or hostile image) is marked
failed with a stable error code and not retried."""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

import dramatiq

from cardvault.adapters.images import Decoder, ImageRefused
from cardvault.domain import processing, uploads
from cardvault.domain.clock import now_ms
from cardvault.domain.models import Card
from cardvault.workers.broker import blob_store, database, settings

log = logging.getLogger("cardvault.processing")
_decoder = Decoder()


def _renditions(card: Card, original: Path) -> dict[str, object]:
    """The renditions stage: a 256 px and a 48 px WebP of an image card, and its size."""
    made = _decoder.renditions(original)
    store = blob_store()
    # Named by the file they come from, so a new file never meets an old rendition's cache.
    tag = hashlib.sha256((card.file_etag or card.file_object or "").encode()).hexdigest()[:16]
    base = f"accounts/{card.account_id}/renditions/{card.id}/{tag}"
    store.put(f"{base}-256.webp", made.compact, content_type="image/webp")
    store.put(f"{base}-48.webp", made.placeholder, content_type="image/webp")
    return {
        "compact_object": f"{base}-256.webp",
        "placeholder_object": f"{base}-48.webp",
        "file_width": made.width,
        "file_height": made.height,
        "file_preview": {"kind": "image", "excerpt": None, "pageCount": None, "animated": made.animated},
    }


STAGES: dict[str, Callable[[Card, Path], dict[str, object]]] = {"renditions": _renditions}


@dramatiq.actor(
    actor_name="run_stage", queue_name="files", max_retries=5, min_backoff=2_000, time_limit=600_000
)
def run_stage(card_pk: int, stage: str) -> None:
    """Run one stage of one card, if it is still to be run."""
    stale_before = now_ms() - int(settings().stale_seconds * 1000)
    with database().transaction() as session:
        card = processing.start(session, card_pk=card_pk, stage=stage, stale_before=stale_before)
        if card is None:
            return
        session.expunge(card)
    try:
        with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
            original = Path(workdir) / "original"
            assert card.file_object is not None
            blob_store().download(card.file_object, original)
            fields = STAGES[stage](card, original)
    except ImageRefused as refused:
        if refused.code != "DECODE_BUSY":  # the file's fault: no retry helps
            log.info("stage %s of card %s failed: %s", stage, card.id, refused)
            with database().transaction() as session:
                processing.finish(session, card_pk=card_pk, stage=stage, error_code=refused.code)
            return
        _release(card_pk, stage)
        raise
    except Exception:  # the store out of reach, or the like: Dramatiq retries with backoff
        _release(card_pk, stage)
        raise
    with database().transaction() as session:
        kept = session.get(Card, card_pk, with_for_update=True)
        if (
            kept is not None
            and kept.file_object == card.file_object
            and processing.finish(session, card_pk=card_pk, stage=stage)
        ):
            for name, value in fields.items():
                setattr(kept, name, value)
            return
        # The card is gone, holds another file now, or another run finished the stage: what this
        # run made belongs to nobody (unless it is what the card holds: the same file's keys).
        made = [
            value
            for name, value in fields.items()
            if name.endswith("_object") and (kept is None or getattr(kept, name) != value)
        ]
        if made:
            uploads.doom(session, [str(v) for v in made])


def _release(card_pk: int, stage: str) -> None:
    with database().transaction() as session:
        processing.release(session, card_pk=card_pk, stage=stage)


def resend_unsettled(older_than_ms: int) -> int:
    """Send again every stage pending or running with no sign of life for ``older_than_ms``
    (its message was lost, or its worker died); return how many."""
    with database().transaction(write=False) as session:
        found = processing.unsettled(session, older_than=now_ms() - older_than_ms)
    for card_pk, stage in found:
        run_stage.send(card_pk, stage)
    return len(found)
