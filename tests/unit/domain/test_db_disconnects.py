"""A lost or refused database connection is a passing fault: a unit of work whose connection was
lost before COMMIT runs again on a checked connection; one lost in COMMIT is not run again (it
may have been saved) and says so; a database that cannot be reached answers 503
SERVICE_UNAVAILABLE, never 500. Connections are killed with pg_terminate_backend, the shared
server itself is never stopped."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool
from starlette.testclient import TestClient

from cardvault.domain.auth import keys
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import ATTEMPTS, PATIENCE_PAUSE, Database
from cardvault.domain.errors import ServiceUnavailable
from cardvault.domain.models import Card
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import app_env, connections_cut

# Nothing listens on port 1 of loopback: the connection is refused at once.
UNREACHABLE = "postgresql+psycopg://postgres@127.0.0.1:1/test"


def _postgres_only(database: Database) -> None:
    if database.dialect != "postgresql":
        pytest.skip("connections that can be killed are PostgreSQL's")


def _kill(database: Database, session: Session) -> None:
    """Terminate the server process behind this session's connection, and wait until it is gone."""
    pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with database.engine.connect() as killer:
        assert killer.execute(text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid}).scalar_one()


def _count(database: Database, content: str) -> int:
    with database.transaction(write=False) as session:
        return int(session.scalar(select(func.count()).select_from(Card).where(Card.content == content)) or 0)


def test_a_connection_lost_before_commit_is_run_again_and_writes_once(
    database: Database, account_id: str
) -> None:
    _postgres_only(database)
    attempts: list[int] = []

    def work() -> str:
        with database.transaction() as session:
            attempts.append(1)
            card = editing.add_card(session, account_id=account_id, content="written once").card
            session.flush()
            if len(attempts) == 1:
                _kill(database, session)
                session.execute(text("SELECT 1"))  # the connection is gone
            return card.id

    database.run(work)
    assert len(attempts) == 2
    assert _count(database, "written once") == 1


def test_a_connection_lost_writing_what_the_block_left_pending_is_run_again(
    database: Database, account_id: str
) -> None:
    _postgres_only(database)
    attempts: list[int] = []

    def work() -> None:
        with database.transaction() as session:
            attempts.append(1)
            card = editing.add_card(session, account_id=account_id, content="noted at the end").card
            card.notes = "pending when the block ends"  # written after the block, before COMMIT

    with connections_cut(database, table="cards", times=1, when="NEW.notes = 'pending when the block ends'"):
        database.run(work)
    assert len(attempts) == 2
    assert _count(database, "noted at the end") == 1


def test_a_connection_lost_in_commit_is_not_run_again_and_says_it_may_be_saved(
    database: Database, account_id: str
) -> None:
    _postgres_only(database)
    attempts: list[int] = []

    def work() -> None:
        with database.transaction() as session:
            attempts.append(1)
            editing.add_card(session, account_id=account_id, content="lost in commit")
            session.flush()
            _kill(database, session)  # the block ends: COMMIT meets a closed connection

    with pytest.raises(ServiceUnavailable) as lost:
        database.run(work)
    assert lost.value.maybe_saved and len(attempts) == 1
    assert _count(database, "lost in commit") == 0  # here it was not (the server died first)


def test_a_patient_unit_of_work_outlasts_more_lost_connections_than_its_attempts(
    database: Database, account_id: str
) -> None:
    _postgres_only(database)
    tries: list[int] = []

    def work() -> None:
        tries.append(1)
        with database.transaction() as session:
            editing.add_card(session, account_id=account_id, content="patient")

    with connections_cut(database, table="cards", times=ATTEMPTS + 1, when="NEW.content = 'patient'"):
        database.run(work, patience=10)
    assert len(tries) == ATTEMPTS + 2
    assert _count(database, "patient") == 1


def test_patience_ends_with_service_unavailable_when_the_database_stays_away(database: Database) -> None:
    _postgres_only(database)
    unreachable = open_database(UNREACHABLE)
    tries: list[int] = []

    def read() -> None:
        tries.append(1)
        with unreachable.transaction(write=False) as session:
            session.execute(text("SELECT 1"))

    started = time.monotonic()
    try:
        with pytest.raises(ServiceUnavailable):
            unreachable.run(read, patience=1.2)
    finally:
        unreachable.dispose()
    # It pauses again only while the pause ends before the deadline: it gives up no sooner
    # than the patience less one pause (however slow its first tries), and then: its quick
    # tries and one a pause, never more (counted: a loaded machine only makes them fewer).
    assert time.monotonic() - started >= 1.2 - PATIENCE_PAUSE
    assert ATTEMPTS < len(tries) <= ATTEMPTS + int(1.2 / PATIENCE_PAUSE)


def test_idempotent_work_is_run_again_after_a_connection_lost_in_commit(
    database: Database, account_id: str
) -> None:
    _postgres_only(database)
    attempts: list[int] = []

    def work() -> None:
        with database.transaction() as session:
            attempts.append(1)
            editing.add_card(session, account_id=account_id, content="committed twice")

    committing = "NEW.content = 'committed twice'"
    with connections_cut(database, table="cards", times=1, when=committing, at_commit=True):
        with pytest.raises(ServiceUnavailable) as lost:
            database.run(work)
        assert lost.value.maybe_saved
    assert _count(database, "committed twice") == 0  # the server died before it saved it
    with connections_cut(database, table="cards", times=1, when=committing, at_commit=True):
        database.run(work, idempotent=True)  # (here it is not; a lease would make it so)
    assert len(attempts) == 3
    assert _count(database, "committed twice") == 1


def test_pooled_connections_killed_while_idle_are_replaced_before_use(database: Database) -> None:
    _postgres_only(database)
    with database.transaction(write=False) as session:  # a connection now idle in the pool
        pooled = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    # The killer has a connection of its own: one of the pool's would be the idle one.
    killer_engine = create_engine(database.engine.url, poolclass=NullPool)
    try:
        with killer_engine.connect() as killer:  # every connection idle in the pool
            idle = killer.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND state = 'idle'"
                )
            ).scalars()
            terminate = text("SELECT pg_terminate_backend(:pid, 5000)")
            killed = [pid for pid in idle if killer.execute(terminate, {"pid": pid}).scalar_one()]
            assert pooled in killed
    finally:
        killer_engine.dispose()
    with database.transaction(write=False) as session:
        assert session.execute(text("SELECT pg_backend_pid()")).scalar_one() != pooled


def test_a_database_that_cannot_be_reached_is_service_unavailable(database: Database) -> None:
    _postgres_only(database)
    unreachable = open_database(UNREACHABLE)

    def read() -> int:
        with unreachable.transaction(write=False) as session:
            return int(session.execute(text("SELECT 1")).scalar_one())

    try:
        with pytest.raises(ServiceUnavailable) as refused:
            unreachable.run(read)
        assert not refused.value.maybe_saved
    finally:
        unreachable.dispose()


def test_the_api_answers_503_service_unavailable_not_500(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    _postgres_only(database)
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=account_id)  # well formed: looked up
    settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_DATABASE_URL": UNREACHABLE})
    app = create_app(settings, open_database(UNREACHABLE))
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/v1/cards", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["code"] == "SERVICE_UNAVAILABLE" and body["retryAt"] is not None
    assert response.headers["Retry-After"] == "1"
