"""The processing pipeline's recorder and actors: one message runs one stage of one card. The
stage's row is the truth (cardvault.domain.pipeline.processing): a message for a stage that is done,
failed, or taken by a live worker does nothing, only the attempt holding the stage's lease
records a result, and the sweeper re-sends stages whose worker went quiet.

Each row of the table (cardvault.domain.pipeline.table) gets an actor here, with the row's
name, queue, time limit and retries, a runner in cardvault.workers.stages (RUNNERS: its ``run``
does the slow part outside any transaction and returns its result) and its rules in
cardvault.domain.pipeline (RULES: its ``apply`` writes the result into the card, in the
transaction that records the stage, if the lease still holds and the card still is what the
result was made from, its basis: cardvault.domain.pipeline.rules.basis). A skipped stage
clears what an earlier run of it left on the card, where its rules say so (``forget_skipped``,
in the transaction that settles it). A stage that fails for a passing reason is
put back to pending and retried by Dramatiq with backoff; one that fails for good is marked
failed with a stable error code. A stage that found the file store out of reach gives its
attempt back (``STORAGE_UNAVAILABLE``) and is sent again STORE_RETRY_MS later, for as long as
the store stays away: the card is not to blame, and no card can take a file meanwhile. One that
finds the disk full waits for room without spending its attempts (cardvault.domain.pipeline.table
says for how long).

A card write answers the stages it queued (cardvault.domain.pipeline.processing.Written), and
``send_after_commit`` sends them once its transaction commits.

``run_stage`` and ``run_transcript_stage`` are the actors of the release before one actor per
stage: they pass messages still queued for them on to the stage's own actor. They can go one
release after this one, once no queue holds their messages."""

from __future__ import annotations

import functools
import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

import dramatiq
from sqlalchemy.orm import Session

from cardvault.adapters import metrics
from cardvault.domain.clock import now_ms
from cardvault.domain.db import after_commit, lock_tags
from cardvault.domain.errors import is_storage_full
from cardvault.domain.files import doomed, held
from cardvault.domain.models import Card
from cardvault.domain.pipeline import processing
from cardvault.domain.pipeline import table as pipeline
from cardvault.domain.pipeline.errors import Deferred, StageFailed, StageSkipped, StoreUnreachable, TryAgain
from cardvault.domain.pipeline.processing import Written
from cardvault.domain.pipeline.results import SIZES
from cardvault.domain.pipeline.rules import RULES, StageRules, basis, forget_skipped
from cardvault.domain.portability.imports import turns as import_turns
from cardvault.services import Services
from cardvault.workers.broker import actor
from cardvault.workers.files import delete_doomed_objects
from cardvault.workers.stages import (
    ai,
    capture,
    link_metadata,
    link_preview,
    media,
    ocr,
    renditions,
    transcript,
)

log = logging.getLogger("cardvault.processing")
MIN_BACKOFF_MS = 2_000
STORE_RETRY_MS = 5_000  # a stage that found the file store out of reach is tried again this late
# How each stage is run, by its row's name (its rules: cardvault.domain.pipeline.rules.RULES).
RUNNERS: Mapping[str, Callable[[Services, Card, str], dict[str, object]]] = {
    "linkMetadata": link_metadata.run,
    "linkPreview": link_preview.run,
    "capture": capture.run,
    "renditions": renditions.run,
    "media": media.run,
    "transcript": transcript.run,
    "ocr": ocr.run,
    "ai": ai.run,
}


def _declare(stage: pipeline.Stage, *, imported: bool = False) -> dramatiq.Actor[[int, int | None], None]:
    def run_one(services: Services, card_pk: int, turn_ms: int | None = None) -> None:
        run(services, card_pk, stage.name, turn_ms=turn_ms)

    run_one.__doc__ = (
        f"Run the {stage.name} stage of one card, if it is still to be run; ``turn_ms``: its "
        "host's turn, taken by an earlier attempt of an imported card's stage that waited for it."
    )
    return actor(
        actor_name=f"{stage.actor_name}_imported" if imported else stage.actor_name,
        queue_name=pipeline.IMPORTED_QUEUE if imported else stage.queue,
        priority=pipeline.IMPORTED_PRIORITY if imported else 0,
        max_retries=stage.retries,
        min_backoff=MIN_BACKOFF_MS,
        time_limit=stage.seconds * 1000,
    )(run_one)


ACTORS = {stage.name: _declare(stage) for stage in pipeline.STAGES}
IMPORTED_ACTORS = {stage.name: _declare(stage, imported=True) for stage in pipeline.STAGES}
TURN_SLACK_MS = 100  # a message this early for its host's turn runs: queues are not clocks


def send_stage(card_pk: int, stage: str, *, imported: bool = False, delay_ms: int | None = None) -> None:
    """Send one stage of one card to the actor that runs it (``imported``: the stage's actor on
    the imported queue), now or ``delay_ms`` later. A stage no row names (one a later release
    dropped, or a downgrade left behind) is logged and left alone, so that one such row never
    stops the sweeper from sending the rest."""
    stage_actor = (IMPORTED_ACTORS if imported else ACTORS).get(stage)
    if stage_actor is None:
        log.warning("card %s has a stage the table does not name: %r; not sent", card_pk, stage)
        return
    stage_actor.send_with_options(args=(card_pk,), delay=delay_ms)


def send_after_commit(session: Session, written: Written) -> None:
    """Send the stages a card write queued once its transaction commits (a lost send is the
    sweeper's: the stages' rows are pending)."""
    for stage in written.stages:
        send = functools.partial(send_stage, written.card.pk, stage, imported=written.imported)
        after_commit(session, send)


def send_turns(services: Services, account_id: str | None = None) -> int:
    """Send the next stages of imports that waited for their accounts' turns (of one account
    when given: its stage settled, or its batch queued some); return how many."""
    with services.database.transaction() as session:
        turns = import_turns.next_turns(session, account_id=account_id)
    for card_pk, stage in turns:
        send_stage(card_pk, stage, imported=True)
    return len(turns)


def _pass_on(card_pk: int, stage: str) -> None:
    """Pass a message queued by an older release on to the stage's own actor."""
    send_stage(card_pk, stage)


def _previous(name: str, queue: str, seconds: int) -> dramatiq.Actor[[int, str], None]:
    return dramatiq.actor(
        actor_name=name,
        queue_name=queue,
        max_retries=pipeline.MAX_ATTEMPTS,
        min_backoff=MIN_BACKOFF_MS,
        time_limit=seconds * 1000,
    )(_pass_on)


run_stage = _previous("run_stage", "files", pipeline.STAGE_SECONDS)
run_transcript_stage = _previous("run_transcript_stage", "transcripts", pipeline.TRANSCRIPT_SECONDS)


# This process's running attempts (lease -> card pk and stage), for which it beats.
_running: dict[str, tuple[int, str]] = {}
_running_lock = threading.Lock()


def _stale_ms(services: Services) -> int:
    """How long a stage may go without a sign of life before it is sent again: a pending one
    (its message was lost) or a running one (its worker died: a live one beats)."""
    return int(services.settings.stale_seconds * 1000)


def beat(services: Services) -> None:
    """Record a sign of life of every attempt this process is running (the sweeper's heartbeat
    thread calls it several times per stale time)."""
    with _running_lock:
        attempts = dict(_running)
    if attempts:
        with services.database.transaction() as session:
            processing.beat(session, attempts)


def run(services: Services, card_pk: int, stage: str, *, turn_ms: int | None = None) -> None:
    """Run one stage of one card, if it is still to be run, and record its result; an imported
    card's stage that fetches from its host first waits for the host's turn (``turn_ms``, when
    an attempt before took it)."""
    row = pipeline.BY_NAME.get(stage)
    if row is None:
        return
    work = RULES[stage]
    # The lease is chosen here, so that a start whose COMMIT was lost can be run again.
    start = functools.partial(_start, services, card_pk, row, secrets.token_hex(16))
    taken = services.database.run(start, idempotent=True)
    if taken is None:
        return
    card, lease = taken.card, taken.lease
    if taken.imported and row.paced and card.url and services.settings.fetch_links:
        turn = turn_ms if turn_ms is not None else services.pacer.turn(_host(card.url), pipeline.HOST_TURN_MS)
        wait = turn - now_ms()
        if wait > TURN_SLACK_MS:
            _defer(services, card_pk, stage, lease, "HOST_PACED", wait, imported=True, turn_ms=turn)
            return
    with _running_lock:
        _running[lease] = (card_pk, stage)
    try:
        _attempt(services, card, stage, lease, work, taken.attempts, taken.imported)
    finally:
        with _running_lock:
            del _running[lease]


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def _attempt(
    services: Services, card: Card, stage: str, lease: str, work: StageRules, attempts: int, imported: bool
) -> None:
    """Run a taken stage's work and record its result, a retry or its end (and count the
    attempt by its outcome, cardvault.adapters.metrics)."""
    outcome = "retried"  # an exception passed on to Dramatiq's retries
    try:
        with metrics.stage_timer(stage):
            outcome = _outcome(services, card, stage, lease, work, attempts, imported)
    finally:
        metrics.STAGE_RUNS.labels(stage, outcome).inc()


def _outcome(
    services: Services, card: Card, stage: str, lease: str, work: StageRules, attempts: int, imported: bool
) -> str:
    card_pk = card.pk
    try:
        fields = RUNNERS[stage](services, card, lease)
    except StageSkipped as skipped:
        _settle(services, card, stage, lease, "skipped", skipped.code, imported)
        return "skipped"
    except Deferred as deferred:
        _defer(services, card_pk, stage, lease, deferred.code, deferred.delay_ms, imported=imported)
        return "deferred"
    except StoreUnreachable as unreachable:
        log.warning("stage %s of card %s waits for the file store: %s", stage, card.id, unreachable)
        _defer(services, card_pk, stage, lease, "STORAGE_UNAVAILABLE", STORE_RETRY_MS, imported=imported)
        return "deferred"
    except StageFailed as failed:
        if failed.transient and attempts < pipeline.MAX_ATTEMPTS:
            log.info("stage %s of card %s will be retried: %s", stage, card.id, failed)
            _release(services, card_pk, stage, lease, failed.code)
            raise TryAgain(failed.code) from None
        log.info("stage %s of card %s failed: %s", stage, card.id, failed)
        _settle(services, card, stage, lease, "failed", failed.code, imported)
        return "failed"
    except Exception as exc:  # the database out of reach, a bug, a full disk: Dramatiq retries
        full = is_storage_full(exc)
        waits = full and card.created_at > now_ms() - pipeline.FULL_DISK_WAIT_MS
        delay_ms = int(services.settings.full_disk_retry_seconds * 1000)
        due_at = now_ms() + delay_ms if waits else None
        _release(
            services,
            card_pk,
            stage,
            lease,
            "STORAGE_FULL" if full else None,
            counted=not waits,
            due_at=due_at,
        )
        if not waits:
            raise
        # The disk is the service's to free, not the card's fault: wait for room.
        log.warning("stage %s of card %s found the disk full (%s); sent again later", stage, card.id, exc)
        send_stage(card_pk, stage, imported=imported, delay_ms=delay_ms)
        return "deferred"
    _record(services, card, stage, lease, work, fields, imported)
    return "completed"


def _defer(
    services: Services,
    card_pk: int,
    stage: str,
    lease: str,
    code: str,
    delay_ms: int,
    *,
    imported: bool,
    turn_ms: int | None = None,
) -> None:
    """Give the attempt back, not counted, with ``code`` as its reason, and send the stage
    again ``delay_ms`` later (with the host's turn it took, if any)."""
    _release(services, card_pk, stage, lease, code, counted=False, due_at=now_ms() + delay_ms)
    if turn_ms is not None:
        IMPORTED_ACTORS[stage].send_with_options(args=(card_pk, turn_ms), delay=delay_ms)
    else:
        send_stage(card_pk, stage, imported=imported, delay_ms=delay_ms)


def _start(services: Services, card_pk: int, row: pipeline.Stage, lease: str) -> processing.Taken | None:
    """Take the stage for this attempt under ``lease``; None when there is nothing to run."""
    stale_before = now_ms() - _stale_ms(services)
    with services.database.transaction() as session:
        taken = processing.start(
            session, card_pk=card_pk, stage=row.name, stale_before=stale_before, lease=lease
        )
        if isinstance(taken, processing.Settled):
            if taken.state == "skipped" and (card := session.get(Card, card_pk)) is not None:
                forget_skipped(session, row.name, card)  # (start holds the card's row)
            _send_followers(session, card_pk, taken.card_type, row.name, taken.imported)
        if not isinstance(taken, processing.Taken):
            return None
        session.expunge(taken.card)
        return taken


def _write(services: Services, change: Callable[[Session], object]) -> None:
    """Make an attempt's change to its stage (its result, or giving the stage back) in a
    transaction of its own, waiting out a database that cannot be reached (Database.run's
    patience, up to the stale period), and run again when its COMMIT was lost (the change is
    made under the attempt's lease, which it clears: a second run after a saved first changes
    nothing). Lost to a passing fault, the change would leave the stage running under a lease
    nobody holds: Dramatiq's retry finds it taken and does nothing, and the card waits until
    the stage's heartbeat goes stale and another worker takes it over."""

    def unit() -> None:
        with services.database.transaction() as session:
            change(session)

    services.database.run(unit, patience=services.settings.stale_seconds, idempotent=True)


def _release(
    services: Services,
    card_pk: int,
    stage: str,
    lease: str,
    error_code: str | None,
    *,
    counted: bool = True,
    due_at: int | None = None,
) -> None:
    release = functools.partial(processing.release, card_pk=card_pk, stage=stage, lease=lease)
    _write(services, functools.partial(release, error_code=error_code, counted=counted, due_at=due_at))


def _record(
    services: Services,
    card: Card,
    stage: str,
    lease: str,
    work: StageRules,
    fields: dict[str, object],
    imported: bool,
) -> None:
    """Keep the attempt's result, if its lease still holds and the card still is what it was
    made from; else doom the objects it stored. What the card keeps is counted in the account's
    stored bytes, last (the account's row is the last lock: cardvault.domain.db)."""
    fields = dict(fields)
    sizes: dict[str, int] = fields.pop(SIZES, None) or {}  # type: ignore[assignment]  # (store_pictures')

    def change(session: Session) -> None:
        if work.WRITES_TAGS:
            lock_tags(session, account_id=card.account_id)  # before the card (cardvault.domain.db)
        kept = session.get(Card, card.pk, with_for_update=True)
        fields_of = basis(stage, card.type)
        current = kept is not None and all(getattr(kept, f) == getattr(card, f) for f in fields_of)
        skipped = work.skipped_by(kept) if kept is not None else None
        current = current and processing.finish(
            session,
            card_pk=card.pk,
            stage=stage,
            lease=lease,
            state="skipped" if skipped else "completed",
            error_code=skipped,
        )
        if current and kept is not None:
            if skipped:
                forget_skipped(session, stage, kept)
            else:
                work.apply(session, kept, fields)
            _send_followers(session, card.pk, card.type, stage, imported)
            _next_turn(services, session, card, imported)
        # What this attempt stored and the card does not hold belongs to nobody.
        made = [
            str(value)
            for name, value in fields.items()
            if name.endswith("_object") and (kept is None or getattr(kept, name) != value)
        ]
        if made:
            doomed.doom(session, made)
        if any(name.endswith("_object") for name in fields):  # its own, or those it replaced
            after_commit(session, delete_doomed_objects.send)
        if current and kept is not None and not skipped:
            kept_sizes = {
                column: n for column, n in sizes.items() if getattr(kept, column) == fields.get(column)
            }
            held.recount(session, kept, kept_sizes)

    _write(services, change)


def _settle(
    services: Services, card: Card, stage: str, lease: str, state: str, error_code: str, imported: bool
) -> None:
    def change(session: Session) -> None:
        if processing.finish(
            session, card_pk=card.pk, stage=stage, lease=lease, state=state, error_code=error_code
        ):
            if state == "skipped" and (kept := session.get(Card, card.pk, with_for_update=True)):
                forget_skipped(session, stage, kept)  # (finish locked the card's row)
            _send_followers(session, card.pk, card.type, stage, imported)
            _next_turn(services, session, card, imported)

    _write(services, change)


def _send_followers(session: Session, card_pk: int, card_type: str, stage: str, imported: bool) -> None:
    for follower in pipeline.followers(card_type, stage):
        after_commit(session, functools.partial(send_stage, card_pk, follower, imported=imported))


def _next_turn(services: Services, session: Session, card: Card, imported: bool) -> None:
    """An imported stage settled: its account may have room for its next turn."""
    if imported:
        after_commit(session, functools.partial(send_turns, services, card.account_id))
