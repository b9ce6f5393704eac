"""Lock order under load on PostgreSQL: 16 clients file, edit, favorite, archive and trash the
same cards over HTTP while tag operations rename, merge and delete their tags batch by batch.
A lock-order deadlock answers 500 or kills a batch; none may happen. The load is counted, not
timed (each client sends REQUESTS, the operations run until the clients are done and theirs is
finished): how many requests a loaded machine gets through in a while is not the behaviour."""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from starlette.testclient import TestClient

from cardvault.domain import folders
from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.errors import CardVaultError
from cardvault.domain.models import TagOperation
from cardvault.domain.tags import operations
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import fresh_postgres_database

pytestmark = pytest.mark.postgres

CLIENTS = 16
REQUESTS = 25  # each client's
STOP_SECONDS = 600  # a thread still running by then is stuck (a deadlock), however loaded the machine
KINDS = ("add", "remove", "edit", "favorite", "archive", "trash")
CARDS = 80
FOLDERS = 4
BATCH_SIZE = 50
POOL = ("red", "green", "blue", "amber")

Request = tuple[str, str, str, dict[str, Any] | None]  # what, method, path, JSON body


@dataclasses.dataclass
class Load:
    """What the threads did."""

    statuses: Counter[tuple[str, int]] = dataclasses.field(default_factory=Counter)
    failures: Counter[str] = dataclasses.field(default_factory=Counter)
    requests: list[int] = dataclasses.field(default_factory=list)
    batches: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    writing: threading.Event = dataclasses.field(default_factory=threading.Event)  # set: clients done

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures[what] += 1


class ServerErrors(logging.Handler):
    """Counts the exceptions behind the app's 500 answers, so a failure names them."""

    def __init__(self, load: Load) -> None:
        super().__init__()
        self.load = load

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.load.fail(f"500 from {describe(record.exc_info[1])}")


def describe(exc: BaseException) -> str:
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return f"{type(exc).__name__} SQLSTATE {sqlstate}" if sqlstate else f"{type(exc).__name__}: {exc}"


@pytest.fixture(scope="module")
def db() -> Iterator[Database]:
    database = open_database(fresh_postgres_database("cardvault_concurrency", "concurrency test"))
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture
def client(db: Database, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_DATABASE_URL": db.engine.url.render_as_string(hide_password=False),
            "CARDVAULT_SECRET_KEY": "s" * 48,
            "CARDVAULT_VALIDATE_RESPONSES": "true",
        }
    )
    # One client for all threads: its requests go through one thread-safe blocking portal, and
    # the app runs each handler on a worker thread, so the requests really overlap.
    with TestClient(create_app(settings, db), raise_server_exceptions=False) as test_client:
        yield test_client


def seed(db: Database) -> tuple[str, str, list[str], list[str]]:
    rng = random.Random(7)
    with db.transaction() as session:
        account = accounts.create_account(session, name=f"concurrency-{time.time_ns()}").id
        key = keys.issue_api_key(session, account_id=account)
        card_ids = [
            editing.add_card(
                session, account_id=account, content=f"card {i}", tags=rng.sample(POOL, 3)
            ).card.id
            for i in range(CARDS)
        ]
        folder_ids = [
            folders.create_folder(session, account_id=account, name=f"folder {i}").id for i in range(FOLDERS)
        ]
    return account, key, card_ids, folder_ids


def next_request(what: str, rng: random.Random, card_ids: list[str], folder_ids: list[str]) -> Request:
    card, folder = rng.choice(card_ids), rng.choice(folder_ids)
    some = {"cardIds": rng.sample(card_ids, rng.randint(5, 30))}  # overlapping sets, ids in random order
    return {
        "add": ("add", "POST", f"/v1/folders/{folder}/cards", some),
        "remove": ("remove", "DELETE", f"/v1/folders/{folder}/cards", some),
        "edit": ("edit", "PATCH", f"/v1/cards/{card}", {"tags": rng.sample(POOL, rng.randint(1, 4))}),
        "favorite": ("favorite", "PATCH", f"/v1/cards/{card}/favorite", {"isFavorited": rng.random() < 0.5}),
        "archive": ("archive", "POST", f"/v1/cards/{card}/{rng.choice(['archive', 'unarchive'])}", None),
        "trash": ("trash", "POST", f"/v1/cards/{card}/{rng.choice(['trash', 'restore'])}", None),
    }[what]


def run_client(
    load: Load, client: TestClient, key: str, card_ids: list[str], folder_ids: list[str], number: int
) -> None:
    """Send REQUESTS requests, every kind in turn (cards and folders chosen by a seeded
    generator, so each client's sequence is the same every run); record every status."""
    rng = random.Random(number)
    sent = 0
    for turn in range(REQUESTS):
        what, method, path, body = next_request(
            KINDS[(number + turn) % len(KINDS)], rng, card_ids, folder_ids
        )
        response = client.request(method, path, headers={"Authorization": f"Bearer {key}"}, json=body)
        with load.lock:
            load.statuses[what, response.status_code] += 1
        sent += 1
    with load.lock:
        load.requests.append(sent)


def start_operation(db: Database, account: str, rng: random.Random) -> str | None:
    tag, other = rng.sample(POOL, 2)
    kind, to = rng.choice(
        [("merge", other), ("rename", tag.upper()), ("rename", f"{tag}-x"), ("delete", None)]
    )
    try:
        with db.transaction() as session:
            return operations.start_tag_operation(session, account_id=account, kind=kind, tag=tag, to=to).id
    except CardVaultError:  # no card has the tag any more, or one operation runs already
        return None


def run_operations(load: Load, db: Database, account: str, *, starts: bool) -> None:
    """Apply batches of the account's running operation, as a worker does; the worker that
    ``starts`` starts a new one whenever none runs while the clients write, the other one helps
    (a repeated message). Both stop once the clients are done and no operation runs."""
    rng = random.Random(0 if starts else 1)
    while True:
        with db.transaction(write=False) as session:
            running = session.scalar(
                select(TagOperation.id).where(TagOperation.running_account_id == account)
            )
        writing = not load.writing.is_set()
        operation_id = running or (start_operation(db, account, rng) if starts and writing else None)
        if operation_id is None:
            if not writing:
                return
            time.sleep(0.005)
            continue
        try:
            with db.transaction() as session:
                operations.run_tag_batch(session, operation_id=operation_id, batch_size=BATCH_SIZE)
        except DBAPIError as exc:
            load.fail(f"tag batch failed: {describe(exc)}")
            continue
        with load.lock:
            load.batches += 1


def completed_operations(db: Database, account: str) -> int:
    with db.transaction(write=False) as session:
        done = (TagOperation.account_id == account) & (TagOperation.status == "completed")
        return session.scalar(select(func.count()).where(done)) or 0


def test_no_request_and_no_tag_batch_fails_while_writers_share_the_cards(
    db: Database, client: TestClient
) -> None:
    account, key, card_ids, folder_ids = seed(db)
    assert start_operation(db, account, random.Random(2)) is not None  # one runs as the clients start
    load = Load()
    clients = [
        threading.Thread(target=run_client, args=(load, client, key, card_ids, folder_ids, number))
        for number in range(CLIENTS)
    ]
    workers = [
        threading.Thread(target=run_operations, args=(load, db, account), kwargs={"starts": starts})
        for starts in (True, False)
    ]
    errors = ServerErrors(load)
    logging.getLogger("cardvault.errors").addHandler(errors)
    try:
        for thread in workers + clients:
            thread.start()
        for thread in clients:
            thread.join(timeout=STOP_SECONDS)
        load.writing.set()  # the operation running now is the last
        for thread in workers:
            thread.join(timeout=STOP_SECONDS)
    finally:
        load.writing.set()
        logging.getLogger("cardvault.errors").removeHandler(errors)

    assert not any(thread.is_alive() for thread in clients + workers), "a thread is stuck"
    # Archiving a card in Trash is refused (409); everything else succeeds.
    unexpected = {sent: n for sent, n in load.statuses.items() if sent[1] != 200 and sent != ("archive", 409)}
    assert not unexpected and not load.failures, f"answers {unexpected}, failures {dict(load.failures)}"
    # Every request was answered, every kind of request succeeded, and every tag operation
    # started ran to completion, batch by batch, leaving none running.
    assert load.requests == [REQUESTS] * CLIENTS, load.requests
    succeeded = {what for what, status in load.statuses if status == 200}
    assert succeeded == set(KINDS)
    with db.transaction(write=False) as session:
        states = session.execute(
            select(TagOperation.status, TagOperation.running_account_id).where(
                TagOperation.account_id == account
            )
        ).all()
    assert states and all(state == ("completed", None) for state in states), states
    assert completed_operations(db, account) == len(states) and load.batches >= len(states)
