"""The sweeper: re-sends operations, exports and stages whose heartbeat went stale, and webhook
deliveries that are due, so a lost message or a killed worker never leaves one behind, and
every ten minutes starts the Trash purge, the deletion of expired Idempotency-Keys, of expired
export archives, of ended sign-in records, of the changes feed's old changes and of ended
imports; it also sends the imports' stages whose accounts' turns came. Beside it, the heartbeat:
a sign of life of the stages this process is running, four times per stale time. Both run in
every worker (and in the embedded worker)."""

from __future__ import annotations

import logging
import threading
import time

import dramatiq

from cardvault.domain.errors import ServiceUnavailable
from cardvault.workers import (
    changes,
    exports,
    files,
    idempotency,
    imports,
    oauth,
    pipeline,
    tags,
    trash,
    webhooks,
)
from cardvault.workers.broker import settings

log = logging.getLogger("cardvault.sweeper")
PURGE_EVERY_SECONDS = 600.0


class Sweeper(dramatiq.Middleware):
    """Starts the sweeping thread when a worker boots and stops it at shutdown."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.swept = threading.Event()  # set once a pass has ended since the worker booted

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
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

    def _beat(self) -> None:
        while not self._stop.wait(settings().stale_seconds / 4):
            try:
                pipeline.beat()
            except Exception:
                log.exception("the stages' heartbeat failed; trying again later")

    def _run(self) -> None:
        # At boot every running operation is resumed: a restarted embedded process lost its
        # queue, and extra messages are harmless (batches are applied under a row lock).
        older_than = 0.0
        next_purge = time.monotonic()
        while not self._stop.is_set():
            try:
                resumed = tags.resume_stale(older_than)
                if resumed:
                    log.info("re-sent %d stale tag operations", resumed)
                resumed = exports.resume_stale(older_than)
                if resumed:
                    log.info("re-sent %d stale exports", resumed)
                resumed = imports.resume_stale(older_than)
                if resumed:
                    log.info("re-sent %d stale imports", resumed)
                resent = pipeline.resend_unsettled(int(older_than * 1000))
                if resent:
                    log.info("re-sent %d processing stages", resent)
                pipeline.send_turns()  # imports' stages, each account's turns (one settle's send lost)
                webhooks.resend_due()  # deliveries due, and endpoints behind their changes
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
            older_than = settings().stale_seconds
            self._stop.wait(settings().sweep_seconds)
