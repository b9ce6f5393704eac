"""The export actor: run twice, on a missing row, resumed after a stop, stopped by a cancel or a
takeover mid-archive (keeping nothing), failing with its class when the store cannot be written,
ending the attempt (not leaving files out) when the store is out of reach, waiting out a full
disk, failing as interrupted once it stopped too often, and resumed in a moment, costing no
attempt, after a passing fault of the database."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, update

from cardvault.adapters.blobs import StoreUnreachable, store_from_settings
from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.bootstrap import bootstrap
from cardvault.domain import folders
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.models import Card, ExportJob
from cardvault.domain.portability.exports import jobs as exports
from cardvault.domain.portability.exports import runs as export_runs
from cardvault.settings import Settings
from cardvault.workers import broker, export_archive
from cardvault.workers import exports as actors
from harness.faults.disk import Filler
from tests.conftest import connections_cut


@pytest.fixture
def store(settings: Settings) -> LocalDiskStore:
    made = store_from_settings(settings)
    assert isinstance(made, LocalDiskStore)
    return made


@pytest.fixture
def bound(database: Database, settings: Settings, store: LocalDiskStore) -> Database:
    bootstrap(settings, database=database, blobs=store)
    return database


def start(db: Database, account: str, *, notes: int = 3) -> str:
    with db.transaction() as session:
        folder = folders.create_folder(session, account_id=account, name="Box")
        for number in range(notes):
            card = editing.add_card(session, account_id=account, content=f"note {number}", tags=["t"]).card
            folders.add_cards(session, account_id=account, folder_id=folder.id, card_ids=[card.id])
        return exports.start_export(session, account_id=account).id


def job(db: Database, job_id: str) -> ExportJob:
    with db.transaction(write=False) as session:
        found = session.get(ExportJob, job_id)
        assert found is not None
        session.expunge(found)
        return found


def archive_of(store: LocalDiskStore, done: ExportJob) -> zipfile.ZipFile:
    assert done.object_key is not None
    return zipfile.ZipFile(io.BytesIO(store.open(done.object_key).read_bytes()))


def parts_left(store: LocalDiskStore) -> list[Path]:
    return list((store.root / "tmp").glob("*.part"))


def test_running_the_actor_twice_changes_nothing_the_second_time(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    job_id = start(bound, account_id)
    actors.run_export(job_id)
    first = job(bound, job_id)
    assert (first.status, first.card_count, first.attempts) == ("ready", 3, 1)
    actors.run_export(job_id)
    assert job(bound, job_id).updated_at == first.updated_at
    assert list(store.keys("exports/")) == [first.object_key]


def test_the_actor_ignores_a_missing_job(bound: Database) -> None:
    actors.run_export("exp_missing")


def test_snapshotting_resumes_where_a_stopped_worker_left_it(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    job_id = start(bound, account_id, notes=5)
    with bound.transaction() as session:
        lease = export_runs.claim(session, job_id=job_id, stale_ms=60_000)
    assert lease is not None
    with bound.transaction() as session:
        assert export_runs.snapshot_batch(session, job_id=job_id, lease=lease, batch_size=2) is True
    # The worker stops here; its heartbeat goes stale, and the next worker takes the job.
    with bound.transaction() as session:
        session.execute(update(ExportJob).where(ExportJob.id == job_id).values(heartbeat_at=0))
    actors.run_export(job_id)
    done = job(bound, job_id)
    assert (done.status, done.card_count, done.attempts) == ("ready", 5, 2)
    listed = json.loads(archive_of(store, done).read("cards.json"))["cards"]
    assert sorted(c["content"] for c in listed) == [f"note {n}" for n in range(5)]


def test_a_fresh_heartbeat_keeps_another_worker_out(bound: Database, account_id: str) -> None:
    job_id = start(bound, account_id)
    with bound.transaction() as session:
        assert export_runs.claim(session, job_id=job_id, stale_ms=60_000) is not None
    actors.run_export(job_id)  # a second message while the first worker works
    assert (job(bound, job_id).status, job(bound, job_id).attempts) == ("running", 1)


def _archiving(db: Database, account: str) -> tuple[str, str, export_archive.Beat, Iterator[bytes]]:
    job_id = start(db, account)
    with db.transaction() as session:
        lease = export_runs.claim(session, job_id=job_id, stale_ms=60_000)
    assert lease is not None
    assert actors._snapshot(db, job_id, lease)
    beat = export_archive.Beat(
        db, job_id, lease, stale_seconds=broker.services_of(broker.broker).settings.stale_seconds
    )
    created = job(db, job_id).created_at
    return (
        job_id,
        lease,
        beat,
        export_archive.write_zip(
            db,
            broker.services_of(broker.broker).blobs,
            beat,
            job_id=job_id,
            account_id=account,
            created_at=created,
        ),
    )


@pytest.mark.parametrize("interruption", ["cancel", "takeover"])
def test_a_cancel_or_a_takeover_mid_archive_stops_the_write_and_keeps_nothing(
    bound: Database, store: LocalDiskStore, account_id: str, interruption: str
) -> None:
    job_id, lease, beat, chunks = _archiving(bound, account_id)

    def interrupted() -> Iterator[bytes]:
        yield next(chunks)
        with bound.transaction() as session:
            if interruption == "cancel":
                exports.cancel_export(session, account_id=account_id, export_id=job_id)
            else:
                assert export_runs.claim(session, job_id=job_id, stale_ms=60_000) is None  # a fresh heartbeat
                session.execute(update(ExportJob).where(ExportJob.id == job_id).values(heartbeat_at=0))
                assert export_runs.claim(session, job_id=job_id, stale_ms=60_000) not in (None, lease)
        beat.every, beat._next = 0.0, 0.0  # the next heartbeat is due
        yield from chunks

    key = export_runs.object_key(account_id, job_id, lease)
    with pytest.raises(export_archive.Stopped):
        store.write(key, interrupted(), content_type=actors.CONTENT_TYPE)
    assert store.stat(key) is None and parts_left(store) == []
    with bound.transaction() as session:  # the stopped worker's late finish changes nothing
        assert export_runs.finish(session, job_id=job_id, lease=lease, object_key=key, size=1) is False
    expected = "canceled" if interruption == "cancel" else "running"
    assert job(bound, job_id).status == expected


def test_a_store_that_cannot_be_written_fails_the_job_as_storage_unavailable_after_its_attempts(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    job_id = start(bound, account_id)
    shutil.rmtree(store.root / "tmp")
    (store.root / "tmp").write_text("not a directory")  # every write fails with an OSError
    for attempt in range(1, export_runs.MAX_ATTEMPTS + 1):
        actors.run_export(job_id)  # (the actor sends itself again, 30 s later; here, at once)
        failed = job(bound, job_id)
        assert failed.attempts == attempt
    assert (failed.status, failed.failure_class, failed.active_account_id) == (
        "failed",
        "storage_unavailable",
        None,
    )
    assert failed.completed_at is not None and failed.object_key is None


def test_a_full_disk_is_waited_for_without_counting_attempts_and_the_job_ends_ready(
    blobs_disk: Path, bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    job_id = start(bound, account_id)
    with Filler(blobs_disk):
        for _ in range(export_runs.MAX_ATTEMPTS + 1):
            actors.run_export(job_id)  # (sent again 30 s later, or by the sweeper; here, at once)
            waiting = job(bound, job_id)
            assert (waiting.status, waiting.attempts, waiting.lease) == ("running", 0, None)
            assert parts_left(store) == []
    actors.run_export(job_id)
    done = job(bound, job_id)
    assert (done.status, done.attempts, done.card_count) == ("ready", 1, 3)


def test_a_disk_full_past_the_wait_counts_attempts_and_fails_as_storage_unavailable(
    blobs_disk: Path, bound: Database, account_id: str
) -> None:
    job_id = start(bound, account_id)
    with bound.transaction() as session:
        long_ago = job(bound, job_id).created_at - actors.FULL_DISK_WAIT_MS - 1
        session.execute(update(ExportJob).where(ExportJob.id == job_id).values(created_at=long_ago))
    with Filler(blobs_disk):
        for _ in range(export_runs.MAX_ATTEMPTS):
            actors.run_export(job_id)
    failed = job(bound, job_id)
    assert (failed.status, failed.failure_class) == ("failed", "storage_unavailable")


def test_a_job_stopped_too_often_fails_as_interrupted(bound: Database, account_id: str) -> None:
    job_id = start(bound, account_id)
    with bound.transaction() as session:
        session.execute(
            update(ExportJob)
            .where(ExportJob.id == job_id)
            .values(attempts=export_runs.MAX_ATTEMPTS, heartbeat_at=0, lease="gone")
        )
    actors.run_export(job_id)
    failed = job(bound, job_id)
    assert (failed.status, failed.failure_class) == ("failed", "interrupted")


def test_lost_connections_cost_no_attempt_and_the_job_is_sent_again_in_a_moment(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    if bound.dialect != "postgresql":
        pytest.skip("connections that can be cut are PostgreSQL's")
    job_id = start(bound, account_id)
    broker.broker.flush_all()
    # Every attempt loses its connection in its snapshot, as many times as a job has attempts.
    with connections_cut(
        bound, table="export_items", times=export_runs.MAX_ATTEMPTS, when=f"NEW.job_id = '{job_id}'"
    ):
        for _ in range(export_runs.MAX_ATTEMPTS):
            sent_at = time.time() * 1000
            actors.run_export(job_id)
            resent = [json.loads(m) for m in broker.broker.queues["exports.DQ"].queue]  # type: ignore[attr-defined]
            assert [m["args"] for m in resent] == [[job_id]]
            assert resent[0]["options"]["eta"] - sent_at < 2000  # not RETRY_DELAY_MS
            assert (job(bound, job_id).status, job(bound, job_id).attempts) == ("running", 0)
            broker.broker.flush_all()
        actors.run_export(job_id)
    done = job(bound, job_id)
    assert (done.status, done.attempts, done.card_count) == ("ready", 1, 3)


def test_a_claim_run_again_under_its_own_lease_finds_the_job_held_by_it(
    bound: Database, account_id: str
) -> None:
    job_id = start(bound, account_id)
    for _ in range(2):  # as after a COMMIT that was lost, yet saved
        with bound.transaction() as session:
            assert export_runs.claim(session, job_id=job_id, stale_ms=60_000, lease="mine") == "mine"
    with bound.transaction() as session:
        assert export_runs.claim(session, job_id=job_id, stale_ms=60_000, lease="another") is None
    assert job(bound, job_id).attempts == 1


def test_a_claim_whose_commit_was_lost_is_run_again_and_the_export_goes_on(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    if bound.dialect != "postgresql":
        pytest.skip("connections that can be cut are PostgreSQL's")
    job_id = start(bound, account_id)
    claiming = f"NEW.id = '{job_id}' AND NEW.lease IS NOT NULL"
    with connections_cut(bound, table="export_jobs", times=1, when=claiming, at_commit=True):
        actors.run_export(job_id)
    done = job(bound, job_id)
    assert (done.status, done.attempts, done.card_count) == ("ready", 1, 3)


def test_the_sweeper_resends_only_jobs_whose_heartbeat_is_stale(
    bound: Database, account_id: str, new_account
) -> None:  # type: ignore[no-untyped-def]
    fresh = start(bound, account_id)
    stale = start(bound, new_account())
    with bound.transaction() as session:
        session.execute(update(ExportJob).where(ExportJob.id == stale).values(heartbeat_at=0))
        found = export_runs.stale(session, older_than_ms=60_000)
    assert stale in found and fresh not in found


def _sparse(chunks: Iterator[bytes], path: Path) -> None:
    """Write the bytes to ``path``, leaving holes for runs of zeros (a 4 GiB archive of a sparse
    file takes little disk)."""
    with path.open("wb") as out:
        for chunk in chunks:
            if chunk.count(0) == len(chunk):
                out.seek(len(chunk), os.SEEK_CUR)
            else:
                out.write(chunk)
        out.truncate()


@pytest.fixture
def memory_path(tmp_path: Path) -> Iterator[Path]:
    """A folder in memory (tmpfs) where the machine has one, else on disk: a sparse file's
    holes read at 30 GiB/s there, at 0.4 GiB/s from this machine's disk (8 GiB were read)."""
    shm = Path("/dev/shm")  # noqa: S108 (a folder of its own is made in it, by mkdtemp)
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    made = Path(tempfile.mkdtemp(dir=shm, prefix="cardvault-"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)  # the database plays no part
def test_an_archive_over_4_gib_is_zip64_and_reads_whole(
    bound: Database, settings: Settings, account_id: str, memory_path: Path
) -> None:
    store = LocalDiskStore(
        memory_path / "blobs", secret_key=settings.secret_key, public_url=settings.public_url
    )
    big = 4 * 1024**3 + 5 * 1024**2
    key = f"accounts/{account_id}/files/big/disk.img"
    store.write(key, iter([b"CV"]), content_type="application/octet-stream")
    os.truncate(store.open(key), big)  # a hole: 4 GiB of zeros after the first two bytes
    with bound.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="").card
        card.type, card.file_object, card.file_name, card.file_size = "document", key, "disk.img", big
        job_id = exports.start_export(session, account_id=account_id).id
    with bound.transaction() as session:
        lease = export_runs.claim(session, job_id=job_id, stale_ms=60_000)
    assert lease is not None and actors._snapshot(bound, job_id, lease)
    beat = export_archive.Beat(
        bound, job_id, lease, stale_seconds=broker.services_of(broker.broker).settings.stale_seconds
    )
    out = memory_path / "export.zip"
    _sparse(
        export_archive.write_zip(bound, store, beat, job_id=job_id, account_id=account_id, created_at=1), out
    )
    assert out.stat().st_size > big
    with zipfile.ZipFile(out) as archive:  # its central directory, found through ZIP64's records
        manifest = json.loads(archive.read("manifest.json"))
        (entry,) = [e for e in manifest["files"] if e["path"].startswith("files/")]
        assert archive.getinfo(entry["path"]).file_size == entry["size"] == big
        digest = hashlib.sha256()
        with archive.open(entry["path"]) as member:  # its CRC-32 is checked at the end
            while chunk := member.read(16 * 1024 * 1024):
                digest.update(chunk)
        assert digest.hexdigest() == entry["sha256"]
    with out.open("rb") as raw:
        raw.seek(-200, os.SEEK_END)
        assert b"PK\x06\x06" in raw.read()  # the ZIP64 end of central directory record


def test_the_sweeper_deletes_archives_no_job_uses_and_the_items_of_ended_jobs(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    job_id = start(bound, account_id)
    actors.run_export(job_id)
    done = job(bound, job_id)
    stray = export_runs.object_key(account_id, job_id, "0123456789abcdef")  # a taken-over attempt's
    store.write(stray, iter([b"PK"]), content_type=actors.CONTENT_TYPE)
    with bound.transaction(write=False) as session:
        assert export_runs.items(session, job_id=job_id, after_pk=0, limit=10)  # kept until swept
    actors.expire_exports()
    assert list(store.keys("exports/")) == [done.object_key]
    with bound.transaction(write=False) as session:
        assert export_runs.items(session, job_id=job_id, after_pk=0, limit=10) == []


def test_a_process_runs_one_export_at_a_time(bound: Database, account_id: str) -> None:
    job_id = start(bound, account_id)
    with actors._one_at_a_time:  # another export runs in this process
        actors.run_export(job_id)
    assert (job(bound, job_id).status, job(bound, job_id).attempts) == ("pending", 0)  # sent again, later
    actors.run_export(job_id)
    assert job(bound, job_id).status == "ready"


def test_ten_thousand_cards_and_more_are_all_exported(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    count = 10_050  # past five snapshot batches and many heartbeat pages
    with bound.transaction() as session:
        session.execute(
            insert(Card),
            [
                {
                    "id": f"crd_bulk{n}",
                    "account_id": account_id,
                    "type": "text",
                    "content": f"n{n}",
                    "is_favorited": False,
                    "created_at": n,
                    "updated_at": n,
                }
                for n in range(count)
            ],
        )
        job_id = exports.start_export(session, account_id=account_id).id
    actors.run_export(job_id)
    done = job(bound, job_id)
    assert (done.status, done.card_count) == ("ready", count)
    listed = json.loads(archive_of(store, done).read("cards.json"))["cards"]
    assert len({c["id"] for c in listed}) == count


def test_a_file_that_cannot_be_opened_is_tried_then_left_out(
    bound: Database, store: LocalDiskStore, account_id: str
) -> None:
    key = f"accounts/{account_id}/files/odd/a.pdf"
    store.write(key, iter([b"%PDF-1.4"]), content_type="application/pdf")
    path = store.open(key)
    path.unlink()
    path.mkdir()  # there (the store knows it), yet it cannot be read
    with bound.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="").card
        card.type, card.file_object, card.file_name, card.file_size = "document", key, "a.pdf", 8
        job_id = exports.start_export(session, account_id=account_id).id
    actors.run_export(job_id)
    done = job(bound, job_id)
    assert (done.status, done.files_included, done.files_omitted, done.files_unreadable) == ("ready", 0, 1, 1)
    manifest = json.loads(archive_of(store, done).read("manifest.json"))
    assert [o["reason"] for o in manifest["omitted"]] == ["unreadable"]


def test_a_store_out_of_reach_ends_the_attempt_rather_than_leave_files_out(
    bound: Database,
    store: LocalDiskStore,
    account_id: str,
    unreachable_s3_env: dict[str, str],
    tmp_path: Path,
) -> None:
    key = f"accounts/{account_id}/files/kept/a.pdf"
    store.write(key, iter([b"%PDF-1.4"]), content_type="application/pdf")
    with bound.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="").card
        card.type, card.file_object, card.file_name, card.file_size = "document", key, "a.pdf", 8
    job_id, _, beat, _ = _archiving(bound, account_id)
    out_of_reach = store_from_settings(
        Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), **unreachable_s3_env})
    )
    created = job(bound, job_id).created_at
    chunks = export_archive.write_zip(
        bound, out_of_reach, beat, job_id=job_id, account_id=account_id, created_at=created
    )
    with pytest.raises(StoreUnreachable):
        b"".join(chunks)  # the file is not left out as unreadable: the store is to blame
