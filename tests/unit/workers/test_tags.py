"""The tag actors: run twice, on a missing row, and resumed by the sweeper."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update

from cardvault.bootstrap import bootstrap
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import TagOperation
from cardvault.domain.tags import operations
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers import tags as actors


@pytest.fixture
def bound(database: Database, settings: Settings) -> Database:
    bootstrap(settings, database=database)
    return database


def start_delete(db: Database, account: str, tag: str) -> str:
    with db.transaction() as session:
        editing.add_card(session, account_id=account, tags=[tag])
        return operations.start_tag_operation(session, account_id=account, kind="delete", tag=tag).id


def state(db: Database, account: str, operation_id: str) -> tuple[str, int, int]:
    with db.transaction(write=False) as session:
        op = operations.get_tag_operation(session, account_id=account, operation_id=operation_id)
        return op.status, op.processed, op.changed


def test_running_the_actor_twice_changes_nothing_the_second_time(bound: Database, account_id: str) -> None:
    operation_id = start_delete(bound, account_id, "t")
    actors.run_tag_operation(operation_id)
    assert state(bound, account_id, operation_id) == ("completed", 1, 1)
    actors.run_tag_operation(operation_id)
    assert state(bound, account_id, operation_id) == ("completed", 1, 1)


def test_the_actor_ignores_a_missing_operation(bound: Database) -> None:
    actors.run_tag_operation("tagop_missing")


def test_retries_exhausted_mark_the_operation_failed(bound: Database, account_id: str) -> None:
    operation_id = start_delete(bound, account_id, "t")
    actors.fail_tag_operation({"args": [operation_id]}, {"retries": 10, "max_retries": 10})
    status, _, _ = state(bound, account_id, operation_id)
    assert status == "failed"
    with bound.transaction(write=False) as session:
        failed = operations.get_tag_operation(session, account_id=account_id, operation_id=operation_id)
    assert failed.error and failed.running_account_id is None
    actors.run_tag_operation(operation_id)  # a late message does nothing
    assert state(bound, account_id, operation_id)[0] == "failed"


def test_the_sweeper_resends_only_stale_operations(bound: Database, account_id: str) -> None:
    operation_id = start_delete(bound, account_id, "t")
    broker.broker.flush_all()
    assert actors.resume_stale(broker.services_of(broker.broker), 60) == 0
    with bound.transaction() as session:  # its last heartbeat two minutes ago: stale
        stale = update(TagOperation).where(TagOperation.id == operation_id)
        session.execute(stale.values(heartbeat_at=now_ms() - 120_000))
    assert actors.resume_stale(broker.services_of(broker.broker), 60) == 1
    messages = [m for m in broker.broker.queues["tags"].queue]  # type: ignore[attr-defined]
    assert any(operation_id in m.decode() for m in messages)
    broker.broker.flush_all()


def test_the_sweeper_starts_the_trash_purge_when_a_worker_boots(bound: Database) -> None:
    from cardvault.workers.sweeper import Sweeper

    broker.broker.flush_all()
    sweeper = Sweeper()
    sweeper.after_worker_boot(broker.broker, None)  # type: ignore[arg-type]
    try:
        deadline = time.monotonic() + 10
        while broker.broker.queues["trash"].qsize() == 0:  # type: ignore[attr-defined]
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        sweeper.before_worker_shutdown(broker.broker, None)  # type: ignore[arg-type]
    message = broker.broker.queues["trash"].get_nowait()  # type: ignore[attr-defined]
    assert b"purge_trash" in message
    broker.broker.flush_all()
