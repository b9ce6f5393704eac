"""The import actor: it reads the job's file as a stream, skips what earlier runs took and
goes on, a batch per transaction; a job that ended is left alone."""

from __future__ import annotations

import itertools

import pytest
from sqlalchemy import func, select, update

from cardvault.domain.db import Database
from cardvault.domain.models import Card, ImportJob
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.imports.formats import delimited
from cardvault.workers import broker, embedded, imports
from cardvault.workers.imports import run_import
from tests.conftest import Api

ENTRIES = import_jobs.BATCH_SIZE + 50
FILE = b"title,url,time_added,tags,status\n" + b"".join(
    b"T,https://example.com/%d,1,,unread\n" % n for n in range(ENTRIES)
)


def _job(database: Database, account_id: str) -> str:
    """A pending job over FILE, stored where an import keeps its file, no message sent."""
    import_id = import_jobs.new_import_id()
    key = f"accounts/{account_id}/imports/{import_id}/pocket.csv"
    broker.services_of(broker.broker).blobs.put(key, FILE, content_type="text/csv")
    with database.transaction() as session:
        session.add(
            import_jobs.new_job(
                import_id=import_id,
                account_id=account_id,
                file_format="pocket",
                on_duplicate="create",  # a batch taken twice would show as twice the cards
                file_name="pocket.csv",
                file_size=len(FILE),
                object_key=key,
            )
        )
    return import_id


def _count(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        return int(
            session.scalar(select(func.count()).select_from(Card).where(Card.account_id == account_id)) or 0
        )


def test_a_run_after_a_lost_one_skips_the_batches_taken_and_takes_the_rest_once(
    api: Api, database: Database
) -> None:
    import_id = _job(database, api.account_id)
    # A first worker claimed the job and took one batch, then died.
    with database.transaction() as session:
        import_jobs.claim(session, import_id=import_id, lease="first", handed=None, stale_ms=60_000)
    first = list(itertools.islice(delimited.pocket([FILE]), import_jobs.BATCH_SIZE))
    with database.transaction() as session:
        import_jobs.take(session, import_id=import_id, lease="first", start=0, items=first, last=False)
    assert _count(database, api.account_id) == import_jobs.BATCH_SIZE
    run_import.fn(import_id)  # while the first one's heartbeat is fresh: dropped
    assert _count(database, api.account_id) == import_jobs.BATCH_SIZE
    with database.transaction() as session:  # its heartbeat goes stale
        session.execute(update(ImportJob).where(ImportJob.id == import_id).values(heartbeat_at=0))
    run_import.fn(import_id)  # the next run, from the job's row
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, import_id)
        assert job is not None
        assert (job.status, job.position, job.found, job.created) == ("completed", ENTRIES, ENTRIES, ENTRIES)
        assert job.attempts >= 2  # (the sweeper of the test's app may have sent it once more)
        urls = list(session.scalars(select(Card.url).where(Card.account_id == api.account_id)))
    assert sorted(urls) == sorted(f"https://example.com/{n}" for n in range(ENTRIES))


def test_a_job_whose_file_is_gone_fails_and_says_so(api: Api, database: Database) -> None:
    import_id = _job(database, api.account_id)
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, import_id)
        assert job is not None and job.object_key is not None
        key = job.object_key
    broker.services_of(broker.broker).blobs.delete([key])
    run_import.fn(import_id)
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, import_id)
        assert job is not None and (job.status, job.error) == (
            "failed",
            "The import's file is gone from storage.",
        )


def test_a_job_whose_retries_ran_out_fails_and_an_ended_one_is_left_as_it_is(
    api: Api, database: Database
) -> None:
    canceled = _job(database, api.account_id)  # an account has one active import at a time
    with database.transaction() as session:
        import_jobs.cancel_import(session, account_id=api.account_id, import_id=canceled)
    running = _job(database, api.account_id)
    for import_id in (running, canceled):  # what Dramatiq sends when run_import's retries run out
        imports.fail_import.fn({"args": [import_id]}, {"retries": 10})
    with database.transaction(write=False) as session:
        failed, ended = session.get(ImportJob, running), session.get(ImportJob, canceled)
        assert failed is not None and (failed.status, failed.error) == (
            "failed",
            "The import failed 10 times and was stopped.",
        )
        assert failed.completed_at is not None
        assert ended is not None and (ended.status, ended.error) == ("canceled", None)


def test_a_job_that_ended_is_not_run(api: Api, database: Database) -> None:
    import_id = _job(database, api.account_id)
    with database.transaction() as session:
        import_jobs.cancel_import(session, account_id=api.account_id, import_id=import_id)
    run_import.fn(import_id)
    assert _count(database, api.account_id) == 0


def test_a_slice_hands_the_job_over_with_its_lease_and_the_next_run_goes_on(
    api: Api, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded.wait_until_idle()  # the sweeper's first pass is over: no other run is sent
    import_id = _job(database, api.account_id)
    monkeypatch.setattr(imports, "SLICE_SECONDS", 0.0)  # every batch ends its slice
    monkeypatch.setattr(imports.run_import, "send", lambda *args: handed.append(args))
    handed: list[tuple[object, ...]] = []
    run_import.fn(import_id)
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, import_id)
        assert job is not None and (job.status, job.position) == ("running", import_jobs.BATCH_SIZE)
        lease = job.lease
    assert handed == [(import_id, lease)]  # the next message may take the job at once
    run_import.fn(*handed[0])
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, import_id)
        assert job is not None and (job.status, job.created, job.attempts) == ("completed", ENTRIES, 1)
