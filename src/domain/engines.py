"""Engines for SQLite (embedded) and PostgreSQL (production): how their connections are set up,
pooled and counted, and how a pooled connection the server closed is refused before use."""

from __future__ import annotations

import select
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.pool import ConnectionPoolEntry, QueuePool

from cardvault.adapters import metrics

# How long a statement of a background job or a command waits for a lock on SQLite (on
# PostgreSQL they wait as long as it takes); API requests wait CARDVAULT_LOCK_TIMEOUT_MS.
PATIENT_SQLITE_MS = 60_000

# Every PostgreSQL session of ours runs short OLTP statements, each bounded by an index range
# (a page, a batch of cards, one row), so it is set up for those once, where connections are
# made:
SESSION_SETTINGS = {
    # JIT compiles a plan for about 10 ms per subplan, more than our statements run: a 16-word
    # search spent 1.4 s of its 1.45 s compiling, a count of 1M cards 168 ms of 246 ms.
    "jit": "off",
    # Parallel workers cost a process start each and only help scans of many rows, which none of
    # our statements is: a tag filter took 41 ms in a parallel plan and 3.2 ms without.
    "max_parallel_workers_per_gather": "0",
    # Plan every execution with its values: the driver prepares repeated statements, and a
    # generic plan, blind to how common a tag or a word is, took 815 ms for a list that the
    # plan made for its values answers in 1 ms (planning costs about 1 ms).
    "plan_cache_mode": "force_custom_plan",
    # Typo candidates (cardvault.domain.search.vocabulary) are words at least this alike by
    # trigrams (pg_trgm's %, default 0.3): one edit in the middle of a five-letter word leaves
    # 0.2 (a swap of neighbours: 2 trigrams of 10 shared).
    "pg_trgm.similarity_threshold": "0.2",
}


def _configure_sqlite(engine: Engine, lock_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # We issue BEGIN ourselves (below), so the driver must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "journal_mode=WAL",
            "foreign_keys=ON",
            f"busy_timeout={lock_timeout_ms}",
            "synchronous=NORMAL",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A writer takes the write lock up front: a deferred transaction that reads and then
        # writes fails at once with SQLITE_BUSY when another writer got in between.
        options = connection.get_execution_options()
        if options.get("single_statement"):
            return  # one statement is a transaction by itself
        connection.exec_driver_sql(f"BEGIN {'IMMEDIATE' if options.get('write') else 'DEFERRED'}")


def make_engine(database_url: str, *, lock_timeout_ms: int | None = None) -> Engine:
    """Create the engine for a sqlite:/// or postgresql+psycopg:// URL whose statements wait at
    most ``lock_timeout_ms`` for a lock (SQLite: for the write lock) before failing as busy;
    None: as long as it takes (on SQLite, PATIENT_SQLITE_MS)."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False},
            pool_size=20,
            max_overflow=20,
            poolclass=_CountedPool,
            hide_parameters=True,  # an error's text never shows a statement's values (hashes, secrets)
        )
        _configure_sqlite(engine, PATIENT_SQLITE_MS if lock_timeout_ms is None else lock_timeout_ms)
        return _counted(engine)
    options = {**SESSION_SETTINGS, "lock_timeout": f"{lock_timeout_ms or 0}ms"}
    engine = create_engine(
        url,
        pool_size=20,
        max_overflow=20,
        poolclass=_CountedPool,
        hide_parameters=True,
        connect_args={"options": " ".join(f"-c {name}={value}" for name, value in options.items())},
    )
    event.listen(engine, "checkout", _refuse_if_closed)
    return _counted(engine)


def _refuse_if_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Refuse a pooled PostgreSQL connection the server has closed while it sat idle (a
    terminated backend, a restart): the pool then takes another, as with a ping, but without
    the ping's round trip on every checkout (one per transaction; a GET of one card sent two
    statements instead of one). An idle connection has nothing to read, so a socket that is
    readable holds the server's last words (FATAL, or the end of the stream)."""
    try:
        readable, _, _ = select.select([dbapi_connection.fileno()], [], [], 0)
    except (OSError, ValueError) as exc:  # closed on our side already
        raise DisconnectionError("the pooled connection is closed") from exc
    if readable:
        raise DisconnectionError("the server closed the pooled connection while it was idle")


class _CountedPool(QueuePool):
    """SQLAlchemy's pool, timing each checkout that found no connection free (a wait)."""

    def _do_get(self) -> ConnectionPoolEntry:
        if self.checkedin() > 0 or self.overflow() < self._max_overflow:  # one free, or room for one
            return super()._do_get()
        started = time.perf_counter()
        try:
            return super()._do_get()
        finally:
            metrics.DB_WAITS.observe(time.perf_counter() - started)


def _counted(engine: Engine) -> Engine:
    """Count the connections in use (cardvault.adapters.metrics)."""
    event.listen(engine, "checkout", lambda *_: metrics.DB_IN_USE.inc())
    event.listen(engine, "checkin", lambda *_: metrics.DB_IN_USE.dec())
    return engine
