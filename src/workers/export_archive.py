"""Writing an export's ZIP archive, a piece at a time: the files read from the blob store
(resumed where a read broke, READ_TRIES times), ``cards.json``, ``folders.json`` and
``manifest.json`` (read from the export's items a page at a time), each stream hashed on the way,
with the job's heartbeat (``Beat``) ticking between pieces. cardvault.workers.exports runs it;
the layout is cardvault.domain.portability.archive's."""

from __future__ import annotations

import hashlib
import logging
import time
import zipfile
from collections.abc import Generator, Iterable, Iterator
from typing import Any

import zipstream

from cardvault.adapters.blobs import BlobStore, StoreUnreachable
from cardvault.domain.db import Database
from cardvault.domain.models import ExportItem, ExportJob
from cardvault.domain.portability import archive
from cardvault.domain.portability.exports import runs as export_runs

log = logging.getLogger("cardvault.exports")

HEARTBEAT_SECONDS = 5.0  # at most; always well inside the sweeper's stale_seconds
READ_TRIES = 3  # a file's read is tried this many times (resuming where it broke)
PAGE = 200  # items read from the database at a time
FOLDER_PAGE = 500


class Stopped(Exception):
    """The job was canceled, or another worker took it over: stop, keep nothing."""


class Beat:
    """Archiving's heartbeat: records progress under the lease every ``every`` seconds, a
    quarter of the time after which the sweeper would hand the job to another worker."""

    def __init__(self, db: Database, job_id: str, lease: str, *, stale_seconds: float) -> None:
        self.db, self.job_id, self.lease = db, job_id, lease
        self.progress = export_runs.Progress()
        self.every = min(HEARTBEAT_SECONDS, stale_seconds / 4)
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


def write_zip(
    db: Database, store: BlobStore, beat: Beat, *, job_id: str, account_id: str, created_at: int
) -> Iterator[bytes]:
    """The archive's bytes: each file as it is read, then the JSON documents, then the
    manifest and the central directory."""
    stream = zipstream.ZipStream(compress_type=zipfile.ZIP_STORED)
    for item in _items(db, job_id, with_files=True):
        archived: dict[str, Any] = {}
        keys = {"file": item.file_object, "captions": item.captions_object, **(item.capture_objects or {})}
        for role, key in keys.items():
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
    stream: zipstream.ZipStream, store: BlobStore, beat: Beat, item: ExportItem, role: str, key: str
) -> Generator[bytes, None, dict[str, Any]]:
    """Add one stored file under its path and return what the manifest says of it; a file
    that cannot be opened after READ_TRIES is left out (``{"omitted": reason}``)."""
    record = item.record
    if role == "file":
        name = record["fileName"]
    elif role == "captions":
        name = (record.get("captionsFile") or {}).get("fileName")
    else:
        name = archive.CAPTURE_ROLES[role][1]
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


def _read(store: BlobStore, key: str, size: int, first: bytes, digest: Any, beat: Beat) -> Iterator[bytes]:
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


def _ticking(chunks: Iterable[bytes], beat: Beat) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk
        beat.tick()


def _add_document(
    stream: zipstream.ZipStream,
    beat: Beat,
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
