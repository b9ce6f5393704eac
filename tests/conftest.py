"""Shared fixtures: a real database per backend (SQLite file, PostgreSQL server), accounts,
and an HTTP client over the real app."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.workers import broker as worker_broker
from cardvault.workers import embedded
from cardvault.workers.broker import provide, services_of
from harness.servers import IN_CI

POSTGRES_URL = os.environ.get(
    "CARDVAULT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
# pytest-xdist names its workers gw0, gw1, ...; a run without workers is worker 0.
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
# Each checkout has databases of its own on the shared server: a run in one checkout (a fresh
# clone's CI beside a working copy) never drops the databases another is using.
CHECKOUT = hashlib.sha256(str(Path(__file__).resolve().parent).encode()).hexdigest()[:8]


def shared_redis_url() -> str:
    """The machine's Redis, at a database number of this worker's own (15, 14, ... down to 2)."""
    base = os.environ.get("CARDVAULT_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    server, number = base.rsplit("/", 1)
    return f"{server}/{int(number) - WORKER % 14}"


def fresh_postgres_database(name: str, purpose: str) -> str:
    """Create (or recreate) a database of this worker's and this checkout's own on the test
    server and return its URL; skip, or fail under CI=true, when the server cannot be reached."""
    name = f"{name}_{CHECKOUT}_w{WORKER}"
    try:
        engine = create_engine(
            POSTGRES_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
        )
        with engine.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            connection.execute(text(f"CREATE DATABASE {name}"))
        engine.dispose()
    except OperationalError as exc:
        message = f"{purpose} skipped: no PostgreSQL server at {POSTGRES_URL} ({exc.orig})"
        if IN_CI:
            pytest.fail(f"CI=true needs PostgreSQL: {message}")
        pytest.skip(message)
    return POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"


@contextmanager
def connections_cut(
    database: Database, *, table: str, times: int, when: str = "true", at_commit: bool = False
) -> Iterator[None]:
    """Have PostgreSQL end the connection of the next ``times`` statements that insert or
    update rows of ``table`` (those matching the SQL condition ``when`` on NEW), or with
    ``at_commit`` of the transactions that did, in their COMMIT (nothing is saved then, but the
    client cannot know): a trigger terminates its own server process, as a failover or
    pg_terminate_backend would, so the connection is lost at a chosen point. PostgreSQL only."""
    name = f"cardvault_cut_{table}"
    timing = "CONSTRAINT TRIGGER {} AFTER" if at_commit else "TRIGGER {} BEFORE"
    deferred = " DEFERRABLE INITIALLY DEFERRED" if at_commit else ""
    with database.engine.begin() as connection:
        connection.execute(text(f"CREATE SEQUENCE {name}"))
        connection.execute(
            text(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                f" IF nextval('{name}') <= {times} THEN PERFORM pg_terminate_backend(pg_backend_pid());"
                " END IF; RETURN NEW; END $$"
            )
        )
        connection.execute(
            text(
                f"CREATE {timing.format(name)} INSERT OR UPDATE ON {table}{deferred} FOR EACH ROW"
                f" WHEN ({when}) EXECUTE FUNCTION {name}()"
            )
        )
    try:
        yield
    finally:
        with database.engine.begin() as connection:
            connection.execute(text(f"DROP TRIGGER {name} ON {table}"))
            connection.execute(text(f"DROP FUNCTION {name}()"))
            connection.execute(text(f"DROP SEQUENCE {name}"))


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@contextmanager
def migrated_database(
    backend: str, tmp_path_factory: pytest.TempPathFactory, name: str
) -> Iterator[Database]:
    """A new migrated database of the backend (``name`` on the PostgreSQL server)."""
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "cardvault.db"
        db = open_database(f"sqlite:///{path}")
    else:
        db = open_database(fresh_postgres_database(name, "PostgreSQL tier"))
    db.migrate()
    yield db
    db.dispose()


@pytest.fixture(scope="session", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A migrated database of each backend, shared by the session's tests."""
    with migrated_database(request.param, tmp_path_factory, "cardvault_unit") as db:
        yield db


@pytest.fixture
def new_account(database: Database) -> Callable[[], str]:
    """Create a fresh account and return its id; tests stay isolated by account."""
    counter = iter(range(1_000_000))

    def create() -> str:
        with database.transaction() as session:
            return accounts.create_account(session, name=f"test-{os.urandom(6).hex()}-{next(counter)}").id

    return create


@pytest.fixture
def account_id(new_account: Callable[[], str]) -> str:
    return new_account()


def app_env(tmp_path: Path, database: Database) -> dict[str, str]:
    """The settings of a test app over the test database, with its own data directory."""
    return {
        "CARDVAULT_DATA_DIR": str(tmp_path),
        "CARDVAULT_DATABASE_URL": database.engine.url.render_as_string(hide_password=False),
        "CARDVAULT_PUBLIC_URL": "https://app.cardvault.test",
        "CARDVAULT_SECRET_KEY": "s" * 48,
        "CARDVAULT_VALIDATE_RESPONSES": "true",
        "CARDVAULT_FETCH_LINKS": "false",  # no test reaches the internet (the link tests serve pages)
        "CARDVAULT_AI": "false",  # cards keep the AI fields they are given (the AI tests turn it on)
        "CARDVAULT_SPEECH": "false",  # no speech recognition (the speech tests turn it on)
        "CARDVAULT_CAPTURE": "false",  # no browser (the capture tests turn it on)
        "CARDVAULT_OCR": "false",  # no OCR (the OCR tests turn it on)
        # Argon2id at its cheapest, so sign-in tests do not spend seconds hashing.
        "CARDVAULT_PASSWORD_TIME_COST": "1",
        "CARDVAULT_PASSWORD_MEMORY_KIB": "8192",
    }


@pytest.fixture
def settings(tmp_path: Path, database: Database) -> Settings:
    return Settings.from_env(app_env(tmp_path, database))


# The apps the tests share, one per database (held, so that its id is never another's).
_shared_apps: dict[int, tuple[Database, Any, Services]] = {}


def shared_app(database: Database, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Services]:
    """The app the tests over ``database`` share, and the services it was built on: building an
    app and its middleware (built once, at its first request) costs about half a second, more
    than most tests. Its lifespan never runs; app_client starts and stops the embedded worker
    around each test instead, as an app's own lifespan would."""
    if id(database) not in _shared_apps:
        settings = Settings.from_env(app_env(tmp_path_factory.mktemp("shared-app"), database))
        app = create_app(settings, database)
        _shared_apps[id(database)] = (database, app, services_of(worker_broker.broker))
    _, app, services = _shared_apps[id(database)]
    return app, services


_addresses = iter(range(1, 1 << 24))


@pytest.fixture
def app_client(
    request: pytest.FixtureRequest, settings: Settings, database: Database
) -> Iterator[TestClient]:
    """An HTTP client over the real app, responses validated against the spec. The session's
    shared app, its actors given its services again (a test's own app may have taken them),
    its embedded worker running while the test runs, and each test its own client address
    (the limits kept per address start empty). A test marked ``fresh_app``, one that fills the
    disk (``blobs_disk``) and one whose ``settings`` are not the default ones (a module's own
    settings fixture) get an app of their own over ``settings`` (its data directory the test's
    ``tmp_path``), started and stopped with the test."""
    # A test that fills the app's disk (blobs_disk) needs the app's data directory to be its own,
    # and one whose module sets other settings (its own settings fixture) needs its own app.
    own = (
        request.node.get_closest_marker("fresh_app") is not None
        or "blobs_disk" in request.fixturenames
        or settings != Settings.from_env(app_env(request.getfixturevalue("tmp_path"), database))
    )
    if own:
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            yield client
        return
    app, services = shared_app(database, request.getfixturevalue("tmp_path_factory"))
    provide(services)
    n = next(_addresses)
    address = f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}"
    working = worker_broker.is_embedded()
    if working:
        embedded.start(services)
    try:
        yield TestClient(app, raise_server_exceptions=False, client=(address, 50000))
    finally:
        if working:
            embedded.stop()


class Api:
    """An HTTP client acting as one account."""

    def __init__(self, client: TestClient, key: str, account_id: str) -> None:
        self.client = client
        self.key = key
        self.account_id = account_id
        self.headers = {"Authorization": f"Bearer {key}"}

    def request(self, method: str, path: str, **kwargs: object):  # type: ignore[no-untyped-def]
        headers = {**self.headers, **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        return self.client.request(method, path, headers=headers, **kwargs)  # type: ignore[arg-type]

    def get(self, path: str, **kwargs: object):  # type: ignore[no-untyped-def]
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: object):  # type: ignore[no-untyped-def]
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: object):  # type: ignore[no-untyped-def]
        return self.request("PATCH", path, **kwargs)

    def put(self, path: str, **kwargs: object):  # type: ignore[no-untyped-def]
        return self.request("PUT", path, **kwargs)

    def create(self, **body: object) -> dict:  # type: ignore[type-arg]
        response = self.post("/v1/cards", json=body)
        assert response.status_code == 200, response.text
        return response.json()["card"]  # type: ignore[no-any-return]


def api_of_new_account(client: TestClient, database: Database, prefix: str) -> Api:
    """A client over ``client``'s app for a new account (named from ``prefix``) with its key."""
    with database.transaction() as session:
        account = accounts.create_account(session, name=f"{prefix}-{time.time_ns()}")
        key = keys.issue_api_key(session, account_id=account.id)
    return Api(client, key, account.id)


@pytest.fixture
def make_api(app_client: TestClient, database: Database, new_account: Callable[[], str]) -> Callable[[], Api]:
    """Make a client for a fresh account with its own API key."""

    def make() -> Api:
        account = new_account()
        with database.transaction() as session:
            key = keys.issue_api_key(session, account_id=account)
        return Api(app_client, key, account)

    return make


@pytest.fixture
def api(make_api: Callable[[], Api]) -> Api:
    return make_api()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep each tier that installs or builds something once per session on one xdist worker
    (the SDK tier's npm tools and generated clients, the browser tier's Chromium)."""
    for item in items:
        tier = item.path.relative_to(item.config.rootpath).parts[1]
        if tier in {"sdk", "browser"}:
            item.add_marker(pytest.mark.xdist_group(tier))
