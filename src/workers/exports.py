"""Actors that run ZIP exports: snapshot the account's cards, then stream the archive (files,
``cards.json``, ``folders.json``, ``manifest.json``) through zipstream-ng straight into the
blob store, with a heartbeat every few seconds that also notices a cancel or a lost lease.
Memory does not grow with the cards or the size of files; only the ZIP's central directory,
about 1 KB a file, is held until the end. The layout is cardvault.domain.portability.archive's."""

from __future__ import annotations

import functools
import hashlib
import logging
import secrets
import threading
import time
import zipfile
from collections.abc import Generator, Iterable, Iterator
from typing import Any

import dramatiq
import zipstream

from cardvault.adapters.blobs import BlobStore, StoreUnreachable
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import ServiceBusy, ServiceUnavailable, is_storage_full
from cardvault.domain.models import ExportItem, ExportJob
from cardvault.domain.portability import archive, export_runs
from cardvault.workers.broker import blob_store, database, settings

log = logging.getLogger("cardvault.exports")

EXPORT_SECONDS = 4 * 3600  # Dramatiq's limit on one attempt; then the sweeper takes it over
HEARTBEAT_SECONDS = 5.0  # at most; always well inside the sweeper's stale_seconds
RETRY_DELAY_MS = 30_000
FULL_DISK_WAIT_MS = 24 * 3600 * 1000  # a full disk is waited for this long, then attempts count
RESUME_DELAY_MS = 500  # after a passing fault of the database: once this process's turn is free
BUSY_DELAY_MS = 10_000  # when this process runs another export
_one_at_a_time = threading.Lock()
READ_TRIES = 3  # a file's read is tried this many times (resuming where it broke)
PAGE = 200  # items read from the database at a time
FOLDER_PAGE = 500
CONTENT_TYPE = "application/zip"


class Stopped(Exception):
    """The job was canceled, or another worker took it over: stop, keep nothing."""


class _Beat:
    """Archiving's heartbeat: records progress under the lease every ``every`` seconds, a
    quarter of the time after which the sweeper would hand the job to another worker."""

    def __init__(self, db: Database, job_id: str, lease: str) -> None:
        self.db, self.job_id, self.lease = db, job_id, lease
        self.progress = export_runs.Progress()
        self.every = min(HEARTBEAT_SECONDS, settings().stale_seconds / 4)
        self._next = time.monotonic() + self.every

    def tick(self, *, force: bool = False) -> None:
        if not force and time.monotonic() < self._next:
            return
        with self.db.transaction() as session:
            alive = export_runs.heartbeat(
                session, job_id=self.job_id, lease=self.lease, progress=self.progress
            )
        self.progress = export_runs.Progress()
        self._next = time.monotonic() + self.every
        if not alive:
            raise Stopped


@dramatiq.actor(
    actor_name="run_export",
    queue_name="exports",
    max_retries=0,  # attempts are counted on the job (export_runs.claim), which also sees crashes
    time_limit=EXPORT_SECONDS * 1000,
)
def run_export(job_id: str) -> None:
    """Run the export from where its row says it is; one at a time in a process, so exports
    never take every worker thread from the other queues (another waits and comes back)."""
    if not _one_at_a_time.acquire(blocking=False):
        run_export.send_with_options(args=(job_id,), delay=BUSY_DELAY_MS)
        return
    try:
        _run(job_id)
    finally:
        _one_at_a_time.release()


def _run(job_id: str) -> None:
    db, patience = database(), settings().stale_seconds
    # The lease is chosen here, so that a claim whose COMMIT was lost can be run again.
    claim = functools.partial(_claim, db, job_id, secrets.token_hex(8))
    lease = db.run(claim, patience=patience, idempotent=True)
    if lease is None:
        return
    try:
        if _snapshot(db, job_id, lease):
            _archive(db, blob_store(), job_id, lease)
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


def _claim(db: Database, job_id: str, lease: str) -> str | None:
    stale_ms = int(settings().stale_seconds * 1000)
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


def _archive(db: Database, store: BlobStore, job_id: str, lease: str) -> None:
    """Write the archive to its own key, then mark the job ready (or delete it, when the
    job was canceled or taken over meanwhile)."""
    with db.transaction(write=False) as session:
        job = session.get(ExportJob, job_id)
        if job is None:
            return
        account_id, created_at = job.account_id, job.created_at
    key = export_runs.object_key(account_id, job_id, lease)
    beat = _Beat(db, job_id, lease)
    chunks = _zip(db, store, beat, job_id=job_id, account_id=account_id, created_at=created_at)
    stored = store.write(key, chunks, content_type=CONTENT_TYPE)
    with db.transaction() as session:
        ready = export_runs.finish(session, job_id=job_id, lease=lease, object_key=key, size=stored.size)
    if not ready:
        store.delete([key])


def _zip(
    db: Database, store: BlobStore, beat: _Beat, *, job_id: str, account_id: str, created_at: int
) -> Iterator[bytes]:
    """The archive's bytes: each file as it is read, then the JSON documents, then the
    manifest and the central directory."""
    stream = zipstream.ZipStream(compress_type=zipfile.ZIP_STORED)
    for item in _items(db, job_id, with_files=True):
        archived: dict[str, Any] = {}
        for role, key in (("file", item.file_object), ("captions", item.captions_object)):
            if key is not None:
                archived[role] = yield from _add_file(stream, store, beat, item, role, key)
        beat.progress.archived[item.card_pk] = archived
        beat.tick()
    beat.tick(force=True)  # what cards.json reads back is recorded
    documents: list[dict[str, Any]] = []
    cards = (_with_paths(item) for item in _items(db, job_id))
    yield from _add_document(stream, beat, "cards.json", archive.json_document("cards", cards), documents)
    folder_count = [0]
    folders = _counted(_folders(db, account_id), folder_count)
    yield from _add_document(
        stream, beat, "folders.json", archive.json_document("folders", folders), documents
    )
    with db.transaction(write=False) as session:
        job = session.get(ExportJob, job_id)
        if job is None:
            raise Stopped
        counts = dict(export_runs.counts(job, folder_count[0]))
    manifest = archive.manifest(
        export_id=job_id,
        created_at=created_at,
        counts=counts,
        files=_manifest_files(db, job_id, documents),
        omitted=_omitted(db, job_id),
    )
    stream.add(_ticking(manifest, beat), "manifest.json", compress_type=zipfile.ZIP_DEFLATED)
    yield from stream.all_files()
    beat.tick(force=True)  # a cancel that came meanwhile stops the archive before it is whole
    yield from stream.footer()


def _add_file(
    stream: zipstream.ZipStream, store: BlobStore, beat: _Beat, item: ExportItem, role: str, key: str
) -> Generator[bytes, None, dict[str, Any]]:
    """Add one stored file under its path and return what the manifest says of it; a file
    that cannot be opened after READ_TRIES is left out (``{"omitted": reason}``)."""
    record = item.record
    name = record["fileName"] if role == "file" else (record.get("captionsFile") or {}).get("fileName")
    path = archive.file_path(role, record["id"], name)
    opened = _open(store, key)
    if isinstance(opened, str):
        beat.progress.omitted += 1
        beat.progress.unreadable += opened == "unreadable"
        return {"cardId": record["id"], "role": role, "fileName": name, "omitted": opened}
    size, first = opened
    digest = hashlib.sha256()
    stream.add(_read(store, key, size, first, digest, beat), path, size=size)
    yield from stream.all_files()
    beat.progress.included += 1
    return {"path": path, "cardId": record["id"], "role": role, "size": size, "sha256": digest.hexdigest()}


def _open(store: BlobStore, key: str) -> tuple[int, bytes] | str:
    """The object's size and first chunk, or why it cannot be read. A store that stayed out of
    reach (StoreUnreachable) is not the file's fault: it ends the attempt, and the export is
    tried again with every file, rather than left without this one."""
    reason, unreachable = "unreadable", None
    for attempt in range(READ_TRIES):
        unreachable = None
        try:
            found = store.stat(key)
            if found is None:
                reason = "missing"
            else:
                reading = store.stream(key)
                try:
                    return found.size, next(reading, b"")
                finally:
                    reading.close()
        except FileNotFoundError:
            reason = "missing"
        except Exception as exc:
            log.warning("reading %s failed (try %d of %d)", key, attempt + 1, READ_TRIES, exc_info=True)
            reason = "unreadable"
            unreachable = exc if isinstance(exc, StoreUnreachable) else None
        time.sleep(0.2 * (attempt + 1))
    if unreachable is not None:
        raise unreachable
    return reason


def _read(store: BlobStore, key: str, size: int, first: bytes, digest: Any, beat: _Beat) -> Iterator[bytes]:
    """The object's bytes after ``first``, resuming where a read broke, up to READ_TRIES
    times; hashed as they pass."""
    digest.update(first)
    offset, failures = len(first), 0
    yield first
    while offset < size:
        try:
            for chunk in store.stream(key, start=offset):
                digest.update(chunk)
                offset += len(chunk)
                yield chunk
                beat.tick()
            return
        except Stopped:
            raise
        except Exception:
            failures += 1
            if failures >= READ_TRIES:
                raise  # bytes of it are in the archive: this attempt cannot leave it out
            log.warning("reading %s broke at byte %d; resuming", key, offset, exc_info=True)
            time.sleep(0.2 * failures)


def _ticking(chunks: Iterable[bytes], beat: _Beat) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk
        beat.tick()


def _add_document(
    stream: zipstream.ZipStream,
    beat: _Beat,
    path: str,
    chunks: Iterable[bytes],
    documents: list[dict[str, Any]],
) -> Iterator[bytes]:
    """Add a JSON document, deflated, and note its size and sha256 for the manifest."""
    digest, size = hashlib.sha256(), 0

    def hashed() -> Iterator[bytes]:
        nonlocal size
        for chunk in _ticking(chunks, beat):
            digest.update(chunk)
            size += len(chunk)
            yield chunk

    stream.add(hashed(), path, compress_type=zipfile.ZIP_DEFLATED)
    yield from stream.all_files()
    documents.append({"path": path, "size": size, "sha256": digest.hexdigest()})


def _items(db: Database, job_id: str, *, with_files: bool = False) -> Iterator[ExportItem]:
    """The export's items (or those with files) in card order, a page per short transaction."""
    after = 0
    while True:
        with db.transaction(write=False) as session:
            page = export_runs.items(
                session, job_id=job_id, after_pk=after, limit=PAGE, with_files=with_files
            )
            session.expunge_all()
        if not page:
            return
        yield from page
        after = page[-1].card_pk


def _counted(records: Iterator[dict[str, Any]], count: list[int]) -> Iterator[dict[str, Any]]:
    for record in records:
        count[0] += 1
        yield record


def _with_paths(item: ExportItem) -> dict[str, Any]:
    """The card as cards.json shows it: with each of its files' path, size and sha256 (null
    when it has none, or it was left out)."""
    archived = item.archived or {}
    record = dict(item.record)
    for role in archive.ROLES:
        entry = archived.get(role) or {}
        record[role] = {k: entry[k] for k in ("path", "size", "sha256")} if "path" in entry else None
    return record


def _folders(db: Database, account_id: str) -> Iterator[dict[str, Any]]:
    after = ""
    while True:
        with db.transaction(write=False) as session:
            page = [
                archive.folder_record(f)
                for f in export_runs.folders(
                    session, account_id=account_id, after_id=after, limit=FOLDER_PAGE
                )
            ]
        if not page:
            return
        yield from page
        after = page[-1]["id"]


def _archived(db: Database, job_id: str) -> Iterator[dict[str, Any]]:
    """What archiving recorded of each file, in card order."""
    after = 0
    while True:
        with db.transaction(write=False) as session:
            page = export_runs.archived(session, job_id=job_id, after_pk=after, limit=PAGE * 10)
        if not page:
            return
        for _, archived in page:
            yield from (archived.get(role) or {} for role in archive.ROLES)
        after = page[-1][0]


def _manifest_files(db: Database, job_id: str, documents: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for entry in _archived(db, job_id):
        if "path" in entry:
            yield entry
    yield from documents


def _omitted(db: Database, job_id: str) -> Iterator[dict[str, Any]]:
    for entry in _archived(db, job_id):
        if "omitted" in entry:
            yield {
                "cardId": entry["cardId"],
                "role": entry["role"],
                "fileName": entry["fileName"],
                "reason": entry["omitted"],
            }


@dramatiq.actor(actor_name="expire_exports", queue_name="housekeeping", max_retries=3)
def expire_exports() -> None:
    """Delete archives past their time, and what writes that never ended left behind."""
    db, store = database(), blob_store()
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


def resume_stale(older_than_seconds: float) -> int:
    """Re-send every pending or running export whose heartbeat is older than this."""
    with database().transaction(write=False) as session:
        stale = export_runs.stale(session, older_than_ms=int(older_than_seconds * 1000))
    for job_id in stale:
        run_export.send(job_id)
    with database().transaction() as session:
        export_runs.resent(session, stale, older_than_ms=int(older_than_seconds * 1000))
    return len(stale)
