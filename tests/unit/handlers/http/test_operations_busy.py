"""A busy database (a lock held too long, a deadlock, a serialization failure) is retried, and
then answers 503 SERVICE_BUSY with nothing half-written, never 500."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database, is_busy
from cardvault.domain.errors import ServiceBusy
from cardvault.domain.models import Card
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers import embedded
from tests.conftest import Api

LOCK_TIMEOUT_MS = 150


@pytest.fixture
def impatient(database: Database) -> Iterator[Database]:
    """The test database, opened again with a short lock timeout."""
    url = database.engine.url.render_as_string(hide_password=False)
    db = open_database(url, lock_timeout_ms=LOCK_TIMEOUT_MS)
    yield db
    db.dispose()


@pytest.fixture
def busy_api(impatient: Database, tmp_path: Path) -> Iterator[Api]:
    settings = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_DATABASE_URL": impatient.engine.url.render_as_string(hide_password=False),
            "CARDVAULT_SECRET_KEY": "s" * 48,
            "CARDVAULT_VALIDATE_RESPONSES": "true",
        }
    )
    with impatient.transaction() as session:
        account = accounts.create_account(session, name=f"busy-{time.time_ns()}")
        key = keys.issue_api_key(session, account_id=account.id)
    with TestClient(create_app(settings, impatient), raise_server_exceptions=False) as client:
        yield Api(client, key, account.id)


def _quiet_card(api: Api, content: str) -> str:
    """Create a card, then wait until the embedded worker is idle (its boot sweep and the card's
    stages write too): the lock each test takes is then the only one. The create itself waits
    for the worker first and is tried again while the worker's writes outlast the impatient
    lock timeout (a loaded machine): that is the setup, not what the tests check."""
    embedded.wait_until_idle()
    for _ in range(20):
        response = api.post("/v1/cards", json={"content": content})
        if response.status_code != 503:
            break
        embedded.wait_until_idle()
    assert response.status_code == 200, response.text
    card: str = response.json()["card"]["id"]
    embedded.wait_until_idle()
    return card


def _hold_the_card(database: Database, card_id: str) -> object:
    """Open a transaction on another connection that holds the card (SQLite: the write lock)."""
    connection = database.engine.connect().execution_options(write=True)
    if database.dialect == "sqlite":
        connection.execute(text("SELECT 1"))  # the engine begins it IMMEDIATE: the write lock
    else:
        connection.execute(text("SELECT pk FROM cards WHERE id = :id FOR UPDATE"), {"id": card_id})
    return connection


class TestLockHeldPastTheTimeout:
    def test_answers_503_service_busy_with_retry_at_and_changes_nothing(
        self, busy_api: Api, database: Database
    ) -> None:
        card = _quiet_card(busy_api, "before")
        holder = _hold_the_card(database, card)
        try:
            started = time.time()
            response = busy_api.patch(f"/v1/cards/{card}", json={"content": "after", "tags": ["x"]})
        finally:
            holder.rollback()  # type: ignore[attr-defined]
            holder.close()  # type: ignore[attr-defined]
        assert response.status_code == 503
        body = response.json()
        assert body == {
            "code": "SERVICE_BUSY",
            "error": "The service is busy; nothing was changed. Retry in a moment.",
            "details": None,
            "requestId": response.headers["X-Request-Id"],
            "retryAt": body["retryAt"],
        }
        assert body["retryAt"] >= started * 1000
        assert response.headers["Retry-After"] == "1"
        after = busy_api.get(f"/v1/cards/{card}").json()
        assert (after["content"], after["tags"]) == ("before", [])

    def test_a_create_answers_503_and_makes_no_card(self, busy_api: Api, database: Database) -> None:
        card = _quiet_card(busy_api, "one")
        holder = _hold_the_card(database, card)
        try:
            if database.dialect == "postgresql":  # a new card waits on nothing but the table
                holder.execute(text("LOCK TABLE cards IN EXCLUSIVE MODE"))  # type: ignore[attr-defined]
            response = busy_api.post("/v1/cards", json={"content": "two"}, headers={"Idempotency-Key": "k1"})
        finally:
            holder.rollback()  # type: ignore[attr-defined]
            holder.close()  # type: ignore[attr-defined]
        assert response.status_code == 503
        with database.transaction(write=False) as session:
            contents = session.scalars(
                select(Card.content).where(Card.account_id == busy_api.account_id)
            ).all()
        assert contents == ["one"]
        # The key was not used up: the retry creates the card.
        retried = busy_api.post("/v1/cards", json={"content": "two"}, headers={"Idempotency-Key": "k1"})
        assert retried.status_code == 200 and "Idempotent-Replayed" not in retried.headers

    def test_a_keyed_create_whose_key_cannot_be_written_answers_503_and_makes_no_card(
        self, busy_api: Api, database: Database
    ) -> None:
        if database.dialect == "sqlite":
            pytest.skip("SQLite's write lock is taken when the transaction begins, before the key")
        embedded.wait_until_idle()
        holder = database.engine.connect()
        try:  # reads of the keys go on; the key's row waits, past the lock timeout
            holder.execute(text("LOCK TABLE idempotency_keys IN EXCLUSIVE MODE"))
            response = busy_api.post("/v1/cards", json={"content": "two"}, headers={"Idempotency-Key": "k2"})
        finally:
            holder.rollback()
            holder.close()
        assert response.status_code == 503
        assert response.json()["code"] == "SERVICE_BUSY"
        assert busy_api.get("/v1/cards").json()["items"] == []
        retried = busy_api.post("/v1/cards", json={"content": "two"}, headers={"Idempotency-Key": "k2"})
        assert retried.status_code == 200 and "Idempotent-Replayed" not in retried.headers

    def test_a_lock_released_while_the_server_retries_lets_the_request_through(
        self, busy_api: Api, database: Database
    ) -> None:
        card = _quiet_card(busy_api, "before")
        holder = _hold_the_card(database, card)
        # Released after the first attempt timed out, before the last one gives up.
        release = threading.Timer(LOCK_TIMEOUT_MS * 1.5 / 1000, lambda: (holder.rollback(), holder.close()))  # type: ignore[attr-defined]
        release.start()
        try:
            response = busy_api.patch(f"/v1/cards/{card}", json={"content": "after"})
        finally:
            release.join()
        assert response.status_code == 200
        assert busy_api.get(f"/v1/cards/{card}").json()["content"] == "after"


@pytest.mark.postgres
class TestPostgresConflicts:
    """The errors PostgreSQL gives the loser of a conflict are ServiceBusy to the caller."""

    def test_a_deadlock_is_service_busy(self, database: Database, account_id: str) -> None:
        if database.dialect != "postgresql":
            pytest.skip("deadlock detection is PostgreSQL's")
        with database.transaction() as session:
            one = editing.add_card(session, account_id=account_id, content="1").card.id
            two = editing.add_card(session, account_id=account_id, content="2").card.id
        errors: list[BaseException] = []
        both_hold_one = threading.Barrier(2)

        def lock(mine: str, theirs: str) -> None:
            # The lock timeout (2 s) is longer than PostgreSQL's deadlock_timeout (1 s).
            try:
                with database.transaction() as session:
                    session.execute(text("SELECT 1 FROM cards WHERE id = :id FOR UPDATE"), {"id": mine})
                    both_hold_one.wait()
                    session.execute(text("SELECT 1 FROM cards WHERE id = :id FOR UPDATE"), {"id": theirs})
            except ServiceBusy as exc:
                errors.append(exc)

        threads = [threading.Thread(target=lock, args=pair) for pair in ((one, two), (two, one))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(errors) == 1
        assert isinstance(errors[0].__cause__, DBAPIError)
        assert errors[0].__cause__.orig.sqlstate == "40P01"  # type: ignore[union-attr]

    def test_a_serialization_failure_counts_as_busy(self, database: Database, account_id: str) -> None:
        if database.dialect != "postgresql":
            pytest.skip("snapshot isolation errors are PostgreSQL's")
        with database.transaction() as session:
            card = editing.add_card(session, account_id=account_id, content="0").card.id
        update = text("UPDATE cards SET content = :c WHERE id = :id")
        with database.engine.connect().execution_options(isolation_level="REPEATABLE READ") as reader:
            reader.execute(text("SELECT content FROM cards WHERE id = :id"), {"id": card})
            with database.transaction() as session:
                session.execute(update, {"c": "a", "id": card})
            with pytest.raises(DBAPIError) as caught:
                reader.execute(update, {"c": "b", "id": card})  # its snapshot's row has changed
        assert caught.value.orig.sqlstate == "40001"  # type: ignore[union-attr]
        assert is_busy(caught.value)
