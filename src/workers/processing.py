"""The processing pipeline's actor: one message runs one stage of one card. The stage's row is
the truth (cardvault.domain.processing): a message for a stage that is done, failed, or taken by
a live worker does nothing, only the attempt holding the stage's lease records a result, and the
sweeper re-sends stages whose worker went quiet.

Each stage is a row of STAGES: ``run`` does the slow part outside any transaction (fetching,
decoding) and returns the card fields it made; ``basis`` names the card field those fields
derive from (the file, the URL): a result made from an old value is dropped. A stage that fails
for a passing reason is put back to pending and retried by Dramatiq with backoff; one that
fails for good is marked failed with a stable error code."""

from __future__ import annotations

import dataclasses
import functools
import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dramatiq
from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.adapters import ai, speech
from cardvault.adapters.decoder import SPEECH_TIMEOUT_SECONDS, Decoder
from cardvault.adapters.fetcher import Fetcher
from cardvault.adapters.images import ImageRefused, Renditions
from cardvault.adapters.pages import Page
from cardvault.domain import links, processing, search
from cardvault.domain.cards import ai as ai_rules
from cardvault.domain.clock import now_ms
from cardvault.domain.db import after_commit, lock_tags
from cardvault.domain.files import uploads
from cardvault.domain.models import Card
from cardvault.domain.processing import StageFailed, StageSkipped
from cardvault.workers.broker import blob_store, database, settings
from cardvault.workers.files import delete_doomed_objects

log = logging.getLogger("cardvault.processing")
# A stage waits at most DECODER_WAIT for the decoder (then DECODE_BUSY, retried), well inside
# its time limit: Dramatiq's limit must never interrupt a thread holding or taking the lock.
DECODER_WAIT = 30.0
_decoder = Decoder(wait=DECODER_WAIT)
# Speech recognition has a child of its own (it keeps the model loaded): one file at a time per
# worker process. Another transcript waits at most SPEECH_WAIT for it, then gives its thread
# back and is sent again SPEECH_BUSY_DELAY_MS later, its attempt not counted: a long file never
# holds the threads every queue shares.
SPEECH_WAIT = 5.0
SPEECH_BUSY_DELAY_MS = 30_000
_speech = Decoder(wait=SPEECH_WAIT)


class TryAgain(Exception):
    """A stage's attempt failed for a reason that may pass: Dramatiq retries it with backoff."""


def _fetcher() -> Fetcher:
    return _fetcher_for(settings().fetch_ports, settings().fetch_allow_loopback)


@functools.cache
def _fetcher_for(ports: tuple[int, ...], allow_loopback: bool) -> Fetcher:
    return Fetcher(ports=ports, allow_loopback=allow_loopback)


def _decode(path: Path, *, large: bool) -> Renditions:
    """Renditions of the image at ``path``, made in the decoder's child process."""
    try:
        return _decoder.renditions(path, large=large)
    except ImageRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.code == "DECODE_BUSY") from None


_PICTURES = {  # a card's picture column, and its stored name's end
    "compact_object": "256.webp",
    "placeholder_object": "48.webp",
    "thumbnail_object": "1200.webp",
    "scrub_object": "scrub.webp",
}


def _store_pictures(card: Card, lease: str, pictures: dict[str, bytes | None]) -> dict[str, object]:
    """Store WebP pictures under names of this attempt's own (its lease): a new file never
    meets an old picture's cache, and what an outrun attempt stored (and dooms) is never what
    a later one recorded. Answers the card's columns for them."""
    base = f"accounts/{card.account_id}/renditions/{card.id}/{lease}"
    fields: dict[str, object] = {}
    for column, data in pictures.items():
        if data is not None:
            key = f"{base}-{_PICTURES[column]}"
            blob_store().put(key, data, content_type="image/webp")
            fields[column] = key
    return fields


def _store_renditions(card: Card, made: Renditions, lease: str, *, large: bool) -> dict[str, object]:
    """A 256 px and a 48 px WebP, and with ``large`` the 1200 px one."""
    pictures = {"compact_object": made.compact, "placeholder_object": made.placeholder}
    return _store_pictures(card, lease, {**pictures, **({"thumbnail_object": made.large} if large else {})})


def _renditions(card: Card, lease: str) -> dict[str, object]:
    """An image card's 256 px and 48 px WebP, its size, its preview and its main colours."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        assert card.file_object is not None
        blob_store().download(card.file_object, original)
        made = _decode(original, large=False)
    return {
        **_store_renditions(card, made, lease, large=False),
        "file_width": made.width,
        "file_height": made.height,
        "file_preview": {"kind": "image", "excerpt": None, "pageCount": None, "animated": made.animated},
        "colors": list(made.colors),
    }


def _analyse(card: Card, *, subtitles: bool = False) -> tuple[dict[str, Any], list[bytes]]:
    """What the decoder's child reads of the card's file."""
    assert card.file_object is not None and card.file_kind is not None
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        blob_store().download(card.file_object, original)
        try:
            return _decoder.media(
                original, file_kind=card.file_kind, mime_type=card.mime_type or "", subtitles=subtitles
            )
        except ImageRefused as refused:
            transient = refused.code == "DECODE_BUSY"
            raise StageFailed(refused.code, str(refused), transient=transient) from None


def _media(card: Card, lease: str) -> dict[str, object]:
    """An audio file's duration and waveform; a video's duration, size, poster and scrub
    strip; a document's preview, facts and text."""
    facts, parts = _analyse(card)
    kind = card.file_kind
    if kind == "audio":
        return {
            "duration_ms": facts["durationMs"],
            "waveform": facts["waveform"],
            "file_preview": {"kind": "audio"},
        }
    if kind == "video":
        large, compact, placeholder, sprite = parts
        pictures = {"thumbnail_object": large, "compact_object": compact, "placeholder_object": placeholder}
        return {
            **_store_pictures(card, lease, {**pictures, "scrub_object": sprite}),
            "duration_ms": facts["durationMs"],
            "file_width": facts["width"],
            "file_height": facts["height"],
            "scrub": facts["scrub"],
            "file_preview": {"kind": "video"},
        }
    fields: dict[str, object] = {
        "file_preview": {
            **facts["preview"],
            "kind": "source" if kind == "source" else facts["preview"]["kind"],
        },
        "source_text": facts["text"],
    }
    if parts:  # a PDF's first page
        large, compact, placeholder = parts
        pictures = {"thumbnail_object": large, "compact_object": compact, "placeholder_object": placeholder}
        fields.update(_store_pictures(card, lease, pictures))
    return fields


class SpeechBusy(Exception):
    """Speech recognition is busy with another file: the stage is sent again later, and the
    attempt is not counted."""


def _transcript(card: Card, _lease: str) -> dict[str, object]:
    """An audio or video file's transcript: its subtitle track, else its caption file, else
    the speech heard in it (where speech recognition is installed and on). A caption file is
    used even when the file cannot be read."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        unreadable: StageFailed | None = None
        if card.file_object is not None:
            blob_store().download(card.file_object, original)
            try:
                facts, _ = _decoder.media(
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
            heard = _speech.speech(original, mime_type=card.mime_type or "")
        except ImageRefused as refused:
            if refused.code == "DECODE_BUSY":
                raise SpeechBusy() from None
            raise StageFailed(refused.code, str(refused)) from None
    if heard["text"] is None:
        raise StageSkipped("NO_SPEECH")
    return {"ai_transcript": heard["text"], "transcript_source": "speech"}


def _link_metadata(card: Card, _lease: str) -> dict[str, object]:
    """What the link's page says."""
    assert card.url is not None
    if not settings().fetch_links:
        raise StageSkipped("FETCHING_OFF")
    return {"page": links.fetch_page(_fetcher(), card.url)}


def _link_preview(card: Card, lease: str) -> dict[str, object]:
    """The page's image as the card's image (1200, 256 and 48 px), unless it was replaced."""
    image_url = (card.link_meta or {}).get("imageUrl")
    if not settings().fetch_links:
        raise StageSkipped("FETCHING_OFF")
    if card.thumbnail_overridden:
        raise StageSkipped("IMAGE_REPLACED")
    if not image_url:
        raise StageSkipped("NO_IMAGE")
    body = links.fetch_image(_fetcher(), image_url)
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "image"
        original.write_bytes(body)
        made = _decode(original, large=True)
    return _store_renditions(card, made, lease, large=True)


def _ai(card: Card, _lease: str) -> dict[str, object]:
    """A summary, tags and the language of the card's text, by the offline engine or the
    configured provider."""
    config = settings()
    if not config.ai:
        raise StageSkipped("AI_OFF")
    with database().transaction(write=False) as session:
        text = ai_rules.text_of(card, ai_rules.source_text(session, card.pk))
        existing = ai_rules.account_tags(session, card.account_id) if config.ai_provider else []
    if not text:
        raise StageSkipped("NO_TEXT")
    try:
        if config.ai_provider is not None:
            described = ai.describe_with_provider(config.ai_provider, text, existing_tags=existing)
        else:
            described = ai.describe_offline(text)
    except ai.AiRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.transient) from None
    return {"described": described}


@dataclasses.dataclass(frozen=True)
class Stage:
    run: Callable[[Card, str], dict[str, object]]  # the card and the attempt's lease
    basis: tuple[str, ...]  # the card fields the result derives from
    writes_tags: bool = False  # its result changes the card's tags (the tag lock comes first)


STAGES = {
    "renditions": Stage(_renditions, ("file_object",)),
    "linkMetadata": Stage(_link_metadata, ("url",)),
    "linkPreview": Stage(_link_preview, ("url",)),
    "media": Stage(_media, ("file_object",)),
    "transcript": Stage(_transcript, ("file_object", "captions_object")),
    "ai": Stage(_ai, ("content", "url", "file_object", "ai_transcript", "metadata_title"), writes_tags=True),
}


# A stage's attempt is bounded (a fetch 15 s, a page read to its first MiBs, a wait for the
# decoder 30 s and a decode 90 s, a file's download and its pictures' upload); Dramatiq stops
# one that runs longer, and another worker takes over a running stage only when it has run
# longer than that (its worker died). The transcript stage, which may wait for speech
# recognition and run it, has a queue and bounds of its own.
STAGE_SECONDS = 240
TRANSCRIPT_SECONDS = STAGE_SECONDS + int(SPEECH_WAIT + SPEECH_TIMEOUT_SECONDS)
_TAKE_OVER = {"transcript": TRANSCRIPT_SECONDS + 30}
TAKE_OVER_SECONDS = STAGE_SECONDS + 30


@dramatiq.actor(
    actor_name="run_stage",
    queue_name="files",
    max_retries=5,
    min_backoff=2_000,
    time_limit=STAGE_SECONDS * 1000,
)
def run_stage(card_pk: int, stage: str) -> None:
    """Run one stage of one card, if it is still to be run."""
    if stage == "transcript":  # sent here by an older release: its own actor has the time
        send_stage(card_pk, stage)
        return
    _run(card_pk, stage)


@dramatiq.actor(
    actor_name="run_transcript_stage",
    queue_name="transcripts",
    max_retries=5,
    min_backoff=2_000,
    time_limit=TRANSCRIPT_SECONDS * 1000,
)
def run_transcript_stage(card_pk: int, stage: str) -> None:
    """Run a card's transcript stage, if it is still to be run."""
    _run(card_pk, stage)


def send_stage(card_pk: int, stage: str) -> None:
    """Send one stage of one card to the actor that runs it."""
    (run_transcript_stage if stage == "transcript" else run_stage).send(card_pk, stage)


def _take_over_ms(stage: str | None = None) -> int:
    """How long a running stage may go without a result before another worker takes it."""
    return int(max(settings().stale_seconds, _TAKE_OVER.get(stage or "", TAKE_OVER_SECONDS)) * 1000)


def _run(card_pk: int, stage: str) -> None:
    step = STAGES.get(stage)
    if step is None:
        return
    stale_before = now_ms() - _take_over_ms(stage)
    with database().transaction() as session:
        taken = processing.start(session, card_pk=card_pk, stage=stage, stale_before=stale_before)
        if isinstance(taken, processing.Settled):
            _send_followers(session, card_pk, taken.card_type, stage)
        if not isinstance(taken, processing.Taken):
            return
        session.expunge(taken.card)
    card, lease = taken.card, taken.lease
    try:
        fields = step.run(card, lease)
    except StageSkipped as skipped:
        _settle(card, stage, lease, "skipped", skipped.code)
        return
    except SpeechBusy:
        with database().transaction() as session:
            processing.release(
                session, card_pk=card_pk, stage=stage, lease=lease, error_code="DECODE_BUSY", counted=False
            )
        run_transcript_stage.send_with_options(args=(card_pk, stage), delay=SPEECH_BUSY_DELAY_MS)
        return
    except StageFailed as failed:
        if failed.transient and taken.attempts < processing.MAX_ATTEMPTS:
            log.info("stage %s of card %s will be retried: %s", stage, card.id, failed)
            with database().transaction() as session:
                processing.release(session, card_pk=card_pk, stage=stage, lease=lease, error_code=failed.code)
            raise TryAgain(failed.code) from None
        log.info("stage %s of card %s failed: %s", stage, card.id, failed)
        _settle(card, stage, lease, "failed", failed.code)
        return
    except Exception:  # the store out of reach, or the like: Dramatiq retries with backoff
        with database().transaction() as session:
            processing.release(session, card_pk=card_pk, stage=stage, lease=lease, error_code=None)
        raise
    _record(card, stage, lease, step, fields)


def _record(card: Card, stage: str, lease: str, step: Stage, fields: dict[str, object]) -> None:
    """Keep the attempt's result, if its lease still holds and the card still is what it was
    made from; else doom the objects it stored."""
    with database().transaction() as session:
        if step.writes_tags:
            lock_tags(session, account_id=card.account_id)  # before the card (cardvault.domain.db)
        kept = session.get(Card, card.pk, with_for_update=True)
        current = kept is not None and all(getattr(kept, f) == getattr(card, f) for f in step.basis)
        replaced = kept is not None and stage == "linkPreview" and kept.thumbnail_overridden
        current = current and processing.finish(
            session,
            card_pk=card.pk,
            stage=stage,
            lease=lease,
            state="skipped" if replaced else "completed",
            error_code="IMAGE_REPLACED" if replaced else None,
        )
        if current and kept is not None:
            page = fields.pop("page", None)
            if isinstance(page, Page):
                links.apply_page(session, kept, page)
            described = fields.pop("described", None)
            if isinstance(described, ai.Described):
                ai_rules.apply(
                    session,
                    kept,
                    summary=described.summary,
                    keywords=described.tags,
                    engine={"kind": described.kind, "model": described.model, "language": described.language},
                )
            if not replaced:  # an image replaced meanwhile stays
                for name, value in fields.items():
                    setattr(kept, name, value)
            if "ai_transcript" in fields:  # transcripts are searched
                session.flush()
                search.index_card(session, kept)
            _send_followers(session, card.pk, card.type, stage)
        # What this attempt stored and the card does not hold belongs to nobody.
        made = [
            str(value)
            for name, value in fields.items()
            if name.endswith("_object") and (kept is None or getattr(kept, name) != value)
        ]
        if made:
            uploads.doom(session, made)
        if any(name.endswith("_object") for name in fields):  # its own, or those it replaced
            after_commit(session, delete_doomed_objects.send)


def _settle(card: Card, stage: str, lease: str, state: str, error_code: str) -> None:
    with database().transaction() as session:
        if processing.finish(
            session, card_pk=card.pk, stage=stage, lease=lease, state=state, error_code=error_code
        ):
            _send_followers(session, card.pk, card.type, stage)


def _send_followers(session: Session, card_pk: int, card_type: str, stage: str) -> None:
    for follower in processing.followers(card_type, stage):
        after_commit(session, functools.partial(send_stage, card_pk, follower))


def resend_unsettled(older_than_ms: int) -> int:
    """Send again every stage pending with no sign of life for ``older_than_ms`` (its message
    was lost) or running past its time (its worker died); return how many."""
    now = now_ms()
    with database().transaction(write=False) as session:
        found = processing.unsettled(
            session,
            older_than=now - older_than_ms,
            taken_over_before=now - _take_over_ms(),
            long_stages={stage: now - _take_over_ms(stage) for stage in _TAKE_OVER},
        )
    for card_pk, stage in found:
        send_stage(card_pk, stage)
    return len(found)
