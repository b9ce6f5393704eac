"""Actors that run ZIP exports: snapshot the account's cards, then stream the archive (files,
``cards.json``, ``folders.json``, ``manifest.json``) through zipstream-ng straight into the
blob store, with a heartbeat every few seconds that also notices a cancel or a lost lease.
Memory does not grow with the cards or the size of files; only the ZIP's central directory,
about 1 KB a file, is held until the end. The layout is cardvault.domain.portability.archive's."""

from __future__ import annotations

import functools
import logging
import threading

from cardvault.adapters.blobs import BlobStore, StoreUnreachable
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import ServiceBusy, ServiceUnavailable, is_storage_full
from cardvault.domain.models import ExportJob
from cardvault.domain.portability.exports import runs as export_runs
from cardvault.services import Services
from cardvault.workers import sliced
from cardvault.workers.broker import actor
from cardvault.workers.export_archive import Beat, Stopped, write_zip

log = logging.getLogger("cardvault.exports")

EXPORT_SECONDS = 4 * 3600  # Dramatiq's limit on one attempt; then the sweeper takes it over
RETRY_DELAY_MS = 30_000
FULL_DISK_WAIT_MS = 24 * 3600 * 1000  # a full disk is waited for this long, then attempts count
RESUME_DELAY_MS = 500  # after a passing fault of the database: once this process's turn is free
BUSY_DELAY_MS = 10_000  # when this process runs another export
_one_at_a_time = threading.Lock()
CONTENT_TYPE = "application/zip"


@actor(
    actor_name="run_export",
    queue_name="exports",
    max_retries=0,  # attempts are counted on the job (export_runs.claim), which also sees crashes
    time_limit=EXPORT_SECONDS * 1000,
)
def run_export(services: Services, job_id: str) -> None:
    """Run the export from where its row says it is; one at a time in a process, so exports
    never take every worker thread from the other queues (another waits and comes back)."""
    if not _one_at_a_time.acquire(blocking=False):
        run_export.send_with_options(args=(job_id,), delay=BUSY_DELAY_MS)
        return
    try:
        _run(services, job_id)
    finally:
        _one_at_a_time.release()


def _run(services: Services, job_id: str) -> None:
    db, patience = services.database, services.settings.stale_seconds
    # The lease is chosen here, so that a claim whose COMMIT was lost can be run again.
    claim = functools.partial(_claim, db, job_id, sliced.new_lease(), sliced.stale_ms(services))
    lease = db.run(claim, patience=patience, idempotent=True)
    if lease is None:
        return
    try:
        if _snapshot(db, job_id, lease):
            _archive(db, services.blobs, job_id, lease, stale_seconds=patience)
    except Stopped:
        log.info("export %s stopped: canceled or taken over", job_id)
    except (ServiceBusy, ServiceUnavailable):
        # A connection lost, the database restarting (or busy past its retries): a passing
        # fault, none of the export's doing, so it costs no attempt. The job is given back once
        # the database answers and sent again in a moment; it resumes where its row says
        # (archiving starts over).
        log.warning("export %s met a passing fault of the database; it resumes once it answers", job_id)
        _give_back(db, job_id, lease, None, patience=patience)
    except Exception as exc:
        full = is_storage_full(exc)  # the store's disk, or the database's
        storage = (
            full
            or isinstance(exc, (OSError, StoreUnreachable))
            or type(exc).__module__.startswith(("botocore", "boto3"))
        )
        if full:
            log.warning("export %s found the disk full (%s); it will be tried again", job_id, exc)
        else:
            log.exception("export %s failed; it will be tried again", job_id)
        _give_back(db, job_id, lease, "storage_unavailable" if storage else "internal_error", full=full)


def _claim(db: Database, job_id: str, lease: str, stale_ms: int) -> str | None:
    with db.transaction() as session:
        return export_runs.claim(session, job_id=job_id, stale_ms=stale_ms, lease=lease)


def _give_back(
    db: Database,
    job_id: str,
    lease: str,
    failure_class: str | None,
    *,
    full: bool = False,
    patience: float = 0.0,
) -> None:
    """After an error: fail the job if it ran out of attempts, else free it and send it again.
    ``failure_class`` None: the error was a passing fault of the database; the attempt is not
    counted, and the job is sent again in RESUME_DELAY_MS (once the database answers, waited
    for up to ``patience`` seconds). An attempt that found the disk full (``full``) is not
    counted either while the job is younger than FULL_DISK_WAIT_MS: the disk is the service's
    to free, not the export's fault."""

    def give_back() -> bool:
        with db.transaction() as session:
            job = session.get(ExportJob, job_id)
            waits = full and job is not None and job.created_at >= now_ms() - FULL_DISK_WAIT_MS
            counted = failure_class is not None and not waits
            if (
                failure_class is not None
                and counted
                and job is not None
                and job.attempts >= export_runs.MAX_ATTEMPTS
            ):
                export_runs.fail(session, job_id=job_id, failure_class=failure_class, lease=lease)
                return True
            export_runs.release(session, job_id=job_id, lease=lease, counted=counted)
            return False

    # Under the lease, which it clears: a second run after a saved first changes nothing.
    if not db.run(give_back, patience=patience, idempotent=True):
        delay = RETRY_DELAY_MS if failure_class is not None else RESUME_DELAY_MS
        run_export.send_with_options(args=(job_id,), delay=delay)


def _snapshot(db: Database, job_id: str, lease: str) -> bool:
    """Read the cards into the export a batch per transaction; False when the lease is lost."""
    while True:
        with db.transaction() as session:
            more = export_runs.snapshot_batch(session, job_id=job_id, lease=lease)
        if more is None:
            return False
        if not more:
            return True


def _archive(db: Database, store: BlobStore, job_id: str, lease: str, *, stale_seconds: float) -> None:
    """Write the archive to its own key, then mark the job ready (or delete it, when the
    job was canceled or taken over meanwhile)."""
    with db.transaction(write=False) as session:
        job = session.get(ExportJob, job_id)
        if job is None:
            return
        account_id, created_at = job.account_id, job.created_at
    key = export_runs.object_key(account_id, job_id, lease)
    beat = Beat(db, job_id, lease, stale_seconds=stale_seconds)
    chunks = write_zip(db, store, beat, job_id=job_id, account_id=account_id, created_at=created_at)
    stored = store.write(key, chunks, content_type=CONTENT_TYPE)
    with db.transaction() as session:
        ready = export_runs.finish(session, job_id=job_id, lease=lease, object_key=key, size=stored.size)
    if not ready:
        store.delete([key])


@actor(actor_name="expire_exports", queue_name="housekeeping", max_retries=3)
def expire_exports(services: Services) -> None:
    """Delete archives past their time, and what writes that never ended left behind."""
    db, store = services.database, services.blobs
    while True:
        with db.transaction() as session:
            keys = export_runs.expire(session)
        store.delete(keys)
        with db.transaction() as session:
            export_runs.forget_archives(session, keys=keys)
        if len(keys) < export_runs.EXPIRE_BATCH:
            break
    while True:
        with db.transaction() as session:
            if export_runs.forget_items(session) < 5000:
                break
    with db.transaction(write=False) as session:
        unused = export_runs.unreferenced(session, list(store.keys("exports/")))
    store.delete(unused)
    store.forget_partial_writes(older_than_seconds=2 * EXPORT_SECONDS, prefix="exports/")


def resume_stale(services: Services, older_than_seconds: float) -> int:
    """Re-send every pending or running export whose heartbeat is older than this."""
    stale = sliced.resend_stale(services, export_runs.stale, run_export.send, older_than_seconds)
    with services.database.transaction() as session:
        export_runs.resent(session, stale, older_than_ms=int(older_than_seconds * 1000))
    return len(stale)
