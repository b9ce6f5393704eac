"""Transactions' after-commit actions: run once the change is committed, never when it rolls
back, and one that fails (a broker that cannot be reached) leaves the change committed, is
logged, and raises nothing (the answer must say the change was made; the sweeper sends the
message again from the rows). A SQLite database on a full disk answers StorageFull. The
connection faults are in test_db_disconnects."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import psycopg.errors
import pytest
import redis
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database, after_commit, is_full
from cardvault.domain.errors import StorageFull
from cardvault.domain.models import Card
from harness.faults.disk import Filler, small_disk


def _count(database: Database, content: str) -> int:
    with database.transaction(write=False) as session:
        return int(session.scalar(select(func.count()).select_from(Card).where(Card.content == content)) or 0)


def _unreachable_broker() -> None:
    raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")


def test_an_action_that_fails_after_the_commit_leaves_the_change_and_is_logged(
    database: Database, new_account: Callable[[], str], caplog: pytest.LogCaptureFixture
) -> None:
    account_id = new_account()
    ran: list[str] = []
    with caplog.at_level(logging.WARNING, logger="cardvault.db"), database.transaction() as session:
        editing.add_card(session, account_id=account_id, content="kept though the broker is down")
        after_commit(session, _unreachable_broker)
        after_commit(session, lambda: ran.append("next"))  # later actions still run
    assert _count(database, "kept though the broker is down") == 1
    assert ran == ["next"]
    (record,) = [r for r in caplog.records if r.name == "cardvault.db"]
    assert "the sweeper will send it again" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], redis.ConnectionError)


def test_an_action_never_runs_when_the_transaction_rolls_back(
    database: Database, new_account: Callable[[], str]
) -> None:
    account_id = new_account()
    ran: list[str] = []
    with pytest.raises(RuntimeError), database.transaction() as session:
        editing.add_card(session, account_id=account_id, content="rolled back")
        after_commit(session, lambda: ran.append("sent"))
        raise RuntimeError("the request failed")
    assert ran == []
    assert _count(database, "rolled back") == 0


def test_a_sqlite_database_on_a_full_disk_answers_storage_full_and_writes_again_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with small_disk(tmp_path / "disk", 2) as disk:
        db = open_database(f"sqlite:///{disk / 'full.db'}")
        try:
            with db.transaction() as session:
                session.execute(text("CREATE TABLE kept (data BLOB)"))
            row = {"data": b"x" * 200_000}  # the write-ahead log must grow for it
            with (
                Filler(disk),
                caplog.at_level(logging.WARNING, logger="cardvault.db"),
                pytest.raises(StorageFull),
                db.transaction() as session,
            ):
                session.execute(text("INSERT INTO kept VALUES (:data)"), row)
            assert any("no room" in r.getMessage() for r in caplog.records)
            with db.transaction() as session:
                session.execute(text("INSERT INTO kept VALUES (:data)"), row)
                assert session.scalar(text("SELECT count(*) FROM kept")) == 1
        finally:
            db.dispose()


def test_postgresql_disk_full_is_told_from_its_other_errors() -> None:
    # The server's own disk cannot be filled from here: its error as psycopg raises it.
    full = OperationalError("INSERT", {}, psycopg.errors.DiskFull("could not extend file"))
    busy = OperationalError("INSERT", {}, psycopg.errors.LockNotAvailable("lock timeout"))
    assert is_full(full) and not is_full(busy)


def test_a_disposed_database_closes_the_connections_given_back_later(database: Database) -> None:
    # SQLAlchemy's dispose() closes only the idle connections; one in use then, or one a late
    # user opens, went back to a pool nobody holds, left open for the garbage collector.
    reopened = open_database(database.engine.url.render_as_string(hide_password=False))
    with reopened.transaction() as session:
        in_use = session.connection().connection.dbapi_connection
        reopened.dispose()
    with reopened.transaction() as session:
        late = session.connection().connection.dbapi_connection
    for connection in (in_use, late):
        with pytest.raises(Exception, match="closed"):
            connection.execute("SELECT 1")
