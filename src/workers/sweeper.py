"""The sweeper: re-sends operations, exports and stages whose heartbeat went stale, and webhook
deliveries that are due, so a lost message or a killed worker never leaves one behind, and
every ten minutes starts the Trash purge, the deletion of expired Idempotency-Keys, of expired
export archives, of ended sign-in records, of the changes feed's old changes and of ended
imports; it also sends the imports' stages whose accounts' turns came. Beside it, the heartbeat:
a sign of life of the stages this process is running, four times per stale time. Both run in
every worker (and in the embedded worker), on the services the broker's actors were given."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

import dramatiq

from cardvault.domain.clock import now_ms
from cardvault.domain.errors import ServiceUnavailable
from cardvault.domain.pipeline import processing
from cardvault.domain.pipeline import table as pipeline_table
from cardvault.services import Services
from cardvault.workers import (
    changes,
    exports,
    files,
    idempotency,
    imports,
    oauth,
    pipeline,
    subscriptions,
    tags,
    trash,
    webhooks,
)
from cardvault.workers.broker import services_of
from cardvault.workers.measured import queue_states

log = logging.getLogger("cardvault.sweeper")
PURGE_EVERY_SECONDS = 600.0
# A stage's message is sent after the commit that queued it (and by another host's clock): one
# this much newer than the stage's last sign of life may be the stage's own.
SEND_SLACK_MS = 1_000


class Sweeper(dramatiq.Middleware):
    """Starts the sweeping thread when a worker boots and stops it at shutdown."""

    def __init__(self) -> None:
        self._broker: dramatiq.Broker | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.swept = threading.Event()  # set once a pass has ended since the worker booted

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._broker = broker
        self._stop.clear()
        self.swept.clear()
        self._threads = [
            threading.Thread(target=self._run, name="cardvault-sweeper", daemon=True),
            threading.Thread(target=self._beat, name="cardvault-heartbeat", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _services(self) -> Services:
        assert self._broker is not None  # (set when the worker booted)
        return services_of(self._broker)

    def _beat(self) -> None:
        while not self._stop.wait(self._services().settings.stale_seconds / 4):
            try:
                pipeline.beat(self._services())
            except Exception:
                log.exception("the stages' heartbeat failed; trying again later")

    def _run(self) -> None:
        # At boot every running operation is resumed: a restarted embedded process lost its
        # queue, and extra messages are harmless (batches are applied under a row lock).
        older_than = 0.0
        next_purge = time.monotonic()
        while not self._stop.is_set():
            services = self._services()
            try:
                resumed = tags.resume_stale(services, older_than)
                if resumed:
                    log.info("re-sent %d stale tag operations", resumed)
                resumed = exports.resume_stale(services, older_than)
                if resumed:
                    log.info("re-sent %d stale exports", resumed)
                resumed = imports.resume_stale(services, older_than)
                if resumed:
                    log.info("re-sent %d stale imports", resumed)
                resent = resend_unsettled(services, int(older_than * 1000))
                if resent:
                    log.info("re-sent %d processing stages", resent)
                pipeline.send_turns(
                    services
                )  # imports' stages, each account's turns (one settle's send lost)
                webhooks.resend_due(services)  # deliveries due, and endpoints behind their changes
                subscriptions.send_due(services)  # feeds whose poll is due, one of each host
                if time.monotonic() >= next_purge:
                    # Several workers sending these is harmless: each deletes what has expired.
                    trash.purge_trash.send()
                    idempotency.forget_idempotency_keys.send()
                    files.forget_old_uploads.send()
                    files.delete_doomed_objects.send()
                    exports.expire_exports.send()
                    oauth.forget_ended_credentials.send()
                    changes.purge_changes.send()
                    imports.forget_ended_imports.send()
                    next_purge = time.monotonic() + PURGE_EVERY_SECONDS
            except ServiceUnavailable:
                # The database restarting, or out of reach: a passing fault, and the next pass
                # sends what this one could not (no traceback every pass of an outage).
                log.warning("sweeping skipped: the database cannot be reached; trying again later")
            except Exception:
                log.exception("sweeping failed; trying again later")
            self.swept.set()
            older_than = self._services().settings.stale_seconds
            self._stop.wait(self._services().settings.sweep_seconds)


def _oldest_waiting(broker: dramatiq.Broker) -> dict[str, int]:
    """When the oldest message ready in each queue was sent (a queue with none is left out);
    none known when the broker cannot be read (every quiet stage is then sent again)."""
    try:
        states = queue_states(broker)
    except Exception as exc:  # Redis out of reach or slow: the stages are sent as before
        log.warning("the queues could not be read; quiet stages are sent again: %s", exc)
        return {}
    return {state.queue: state.oldest_ms for state in states if state.oldest_ms is not None}


def _still_queued(stage: processing.Unsettled, oldest_waiting: Mapping[str, int]) -> bool:
    """Whether a quiet pending stage's message may still wait in its queue: a message sent no
    later than the stage's last sign of life is waiting there, and the stage's was sent then.
    (After 25 worker restarts on a loaded machine, the sweeper sent every queued stage again
    each stale time and at each boot: 20,333 messages for 2,636 stages, each one a worker's
    turn spent on a stage already run or taken.)
    A running one's worker died (a live one beats): always sent again."""
    row = pipeline_table.BY_NAME.get(stage.stage)
    if row is None:  # a stage the table does not name: send_stage says so
        return False
    oldest = oldest_waiting.get(pipeline_table.IMPORTED_QUEUE if stage.imported else row.queue)
    return stage.pending and oldest is not None and oldest <= stage.updated_at + SEND_SLACK_MS


def resend_unsettled(services: Services, older_than_ms: int) -> int:
    """Send again every stage pending or running with no sign of life for ``older_than_ms``
    (its message was lost, or its worker died), but a pending one whose message still waits in
    its queue; return how many were sent. Those still queued count as seen, as the sent ones do
    (``processing.resent``): the next pass looks past them, to a dead worker's running stages."""
    now = now_ms()
    with services.database.transaction(write=False) as session:
        found = processing.unsettled(
            session,
            older_than=now - older_than_ms,
            imported_older_than=now - max(older_than_ms, pipeline_table.IMPORTED_STALE_MS),
        )
    waiting = _oldest_waiting(services.broker)
    lost = [stage for stage in found if not _still_queued(stage, waiting)]
    for stage in lost:
        pipeline.send_stage(stage.card_pk, stage.stage, imported=stage.imported)
    with services.database.transaction() as session:
        processing.resent(session, [(s.card_pk, s.stage) for s in found], older_than=now - older_than_ms)
    return len(lost)
