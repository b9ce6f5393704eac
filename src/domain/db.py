"""Engines, transactions and migrations for SQLite (embedded) and PostgreSQL (production).

Lock order (PostgreSQL; SQLite runs one writer at a time): a writer takes locks top-down, never
back up: an operation or folder row; then the account's tag lock (``lock_tags``); then cards,
several only in ascending pk (``ORDER BY pk FOR UPDATE``); then child rows (card_tags,
folder_cards, card_search) only of cards it holds; then the account's tag counters
(cardvault.domain.tags.counts), in name_key order; then the account's row, for its storage
counters (cardvault.domain.files.quotas), several accounts' in id order; at COMMIT, the
search vocabulary's rows (cardvault.domain.search.vocabulary), in (account, word) order, and
last the change counters (cardvault.domain.changes), in account order. Every wait then points
down the same order, so no two transactions can wait for each other (a deadlock). Whoever
changes the tag counts holds the tag lock (shared; a tag batch exclusive), so no count moves
while a batch runs."""

from __future__ import annotations

import hashlib
import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import CursorResult, Delete, Engine, Update, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from cardvault.domain.engines import make_engine
from cardvault.domain.errors import ServiceBusy, ServiceUnavailable, StorageFull

T = TypeVar("T")
log = logging.getLogger("cardvault.db")
# What a feature installs on the write sessions to write at COMMIT (its listeners).
AtCommit = Callable[[sessionmaker[Session]], None]
_joined: ContextVar[tuple[Database, Session] | None] = ContextVar("cardvault_joined", default=None)

ATTEMPTS = 3  # of a unit of work that found the database busy, before ServiceBusy
PATIENCE_PAUSE = 0.5  # seconds between tries of a patient unit of work (Database.run)
# SQLSTATEs of a transaction that lost to another and would succeed when run again: deadlock
# detected, serialization failure, lock not available (lock_timeout).
_BUSY_SQLSTATES = frozenset({"40P01", "40001", "55P03"})
MIGRATIONS = str(Path(__file__).resolve().parent / "migrations")
_MIGRATION_LOCK = 4_275_001  # pg_advisory_lock key: one migrator at a time across processes
_TAG_LOCKS = 4_275_002  # first pg_advisory_xact_lock key of the accounts' tag locks
_TAG_LOCK_SQL = {
    False: text("SELECT pg_advisory_xact_lock_shared(CAST(:space AS integer), CAST(:key AS integer))"),
    True: text("SELECT pg_advisory_xact_lock(CAST(:space AS integer), CAST(:key AS integer))"),
}


def rows_changed(session: Session, statement: Update | Delete) -> int:
    """Run an UPDATE or DELETE and return how many rows it matched."""
    # Session.execute is typed as returning Result; a DML statement's is a CursorResult.
    return cast("CursorResult[Any]", session.execute(statement)).rowcount


def after_commit(session: Session, action: Callable[[], object]) -> None:
    """Run ``action`` once the session's transaction has committed; never if it rolls back
    (so a job is sent only for rows its worker will find).

    An action that fails (the broker cannot be reached) is logged, not raised: the change is
    committed and its answer must say so. Every action is a message whose work the rows
    already record, and the sweeper sends it again from them (stale stages, operations and
    exports; the purges on its schedule)."""

    def run(_session: Session) -> None:
        try:
            action()
        except Exception:
            log.warning("after the commit, %r failed; the sweeper will send it again", action, exc_info=True)

    event.listen(session, "after_commit", run, once=True)


def lock_tags(session: Session, *, account_id: str, exclusive: bool = False) -> None:
    """Hold the account's tag lock until the transaction ends: shared to give cards tags,
    exclusive to run a tag operation's batch, so no card gains a tag between its statements."""
    if session.get_bind().dialect.name == "postgresql":
        key = int.from_bytes(hashlib.sha256(account_id.encode()).digest()[:4], "big", signed=True)
        session.execute(_TAG_LOCK_SQL[exclusive], {"space": _TAG_LOCKS, "key": key})


class Database:
    """An engine and the transactions opened on it."""

    def __init__(self, engine: Engine, *, at_commit: Sequence[AtCommit]) -> None:
        """``at_commit``: what to install on the write sessions, in the order their writers
        lock (cardvault.domain.database.AT_COMMIT: the features' commit-time writers)."""
        self.engine = engine
        # Reads see one snapshot (SQLite gives one to every transaction in WAL mode), so a
        # list's total and its items agree.
        reads = (
            engine
            if engine.dialect.name == "sqlite"
            else engine.execution_options(isolation_level="REPEATABLE READ")
        )
        self._sessions = sessionmaker(reads, expire_on_commit=False)
        # A read of one statement is consistent by itself: it runs without BEGIN and COMMIT
        # (on PostgreSQL two round trips fewer).
        single = (
            engine.execution_options(single_statement=True)
            if engine.dialect.name == "sqlite"
            else engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        self._single_sessions = sessionmaker(single, expire_on_commit=False)
        self._write_sessions = sessionmaker(engine.execution_options(write=True), expire_on_commit=False)
        for install in at_commit:
            install(self._write_sessions)
        self._disposed = False
        event.listen(engine, "checkin", self._close_once_disposed)

    @classmethod
    def from_url(
        cls, database_url: str, *, at_commit: Sequence[AtCommit], lock_timeout_ms: int | None = None
    ) -> Database:
        """Open the database at a sqlite:/// or postgresql+psycopg:// URL; API processes pass
        a lock timeout, so a request blocked by a lock fails (and is retried) rather than waits."""
        return cls(make_engine(database_url, lock_timeout_ms=lock_timeout_ms), at_commit=at_commit)

    @property
    def dialect(self) -> str:
        """Return ``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    @contextmanager
    def transaction(self, *, write: bool = True, snapshot: bool = True) -> Iterator[Session]:
        """Open a session in one transaction: commit when the block ends, roll back on error.

        A reader (``write=False``) whose block sends a single statement passes
        ``snapshot=False``: it then runs without a transaction of its own on PostgreSQL."""
        joined = _joined.get()
        if joined is not None and joined[0] is self:
            yield joined[1]  # inside unit(): its transaction is this block's
            return
        readers = self._sessions if snapshot else self._single_sessions
        factory = self._write_sessions if write else readers
        committing = False
        try:
            with factory() as session, session.begin():
                yield session
                # What the block left pending is written now, not by COMMIT: a connection lost
                # while it is written saved nothing, and the work may run again.
                session.flush()
                committing = True  # the block is done: what fails now fails in COMMIT
        except DBAPIError as exc:
            if is_busy(exc):
                raise ServiceBusy() from exc
            if is_full(exc):
                log.warning("the database found no room to write: %s", exc.orig)
                raise StorageFull() from exc
            if is_unreachable(exc):
                # Lost in COMMIT, the change may have been saved: not to be run again blindly.
                raise ServiceUnavailable(maybe_saved=committing and write) from exc
            raise

    @contextmanager
    def unit(self) -> Iterator[Session]:
        """Open one write transaction that every ``transaction()`` opened inside the block (in
        this thread) joins: a request's work and what is recorded about it commit together, or
        neither does. A joined block that fails is not rolled back by itself: its error must
        end the unit (handlers never catch domain errors)."""
        with self.transaction() as session:
            token = _joined.set((self, session))
            try:
                yield session
            finally:
                _joined.reset(token)

    def run(self, work: Callable[[], T], *, patience: float = 0.0, idempotent: bool = False) -> T:
        """Run a unit of work (which opens its own transactions) and return its result; when
        the database was busy (a lock wait timed out, a deadlock, a serialization failure), or
        its connection was lost before COMMIT (the pool hands out a checked one next), the
        transaction rolled back and the work is run again, up to ATTEMPTS times in all, after a
        short random pause. Past that ServiceBusy or ServiceUnavailable propagates, with nothing
        written; a connection lost in COMMIT propagates at once (the change may be saved).

        A worker holding a result it would rather keep than do again passes ``patience``: while
        the database cannot be reached (a restart, a failover), the work is then run again
        every PATIENCE_PAUSE seconds for up to that many seconds, and only then does
        ServiceUnavailable propagate. API requests have none: they answer 503 at once. Work
        that changes nothing more when run again after it was saved (a write guarded by the
        lease it sets or clears) passes ``idempotent``: it is run again after a connection lost
        in COMMIT as well."""
        deadline = time.monotonic() + patience
        attempt = 0
        while True:
            attempt += 1
            try:
                return work()
            except (ServiceBusy, ServiceUnavailable) as exc:
                if getattr(exc, "maybe_saved", False) and not idempotent:
                    raise
                if attempt < ATTEMPTS:
                    # Apart, so they do not collide again (jitter, not a secret).
                    time.sleep(random.uniform(0.01, 0.05) * attempt)  # noqa: S311
                elif isinstance(exc, ServiceUnavailable) and time.monotonic() + PATIENCE_PAUSE < deadline:
                    if attempt == ATTEMPTS:
                        log.warning("the database cannot be reached; waiting up to %.0f s for it", patience)
                    time.sleep(PATIENCE_PAUSE)
                else:
                    raise

    def migrate(self, revision: str = "head") -> None:
        """Apply every pending migration (up to ``revision``); safe to call from several
        processes at once."""
        config = Config()
        config.set_main_option("script_location", MIGRATIONS)
        with self.engine.connect() as connection:
            is_postgres = connection.dialect.name == "postgresql"
            if is_postgres:
                # Migrations wait for each other, and for running requests, as long as it takes.
                connection.execute(text("SET lock_timeout = 0"))
                connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK})
                connection.commit()
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                # SQLite's batch migrations copy a table and drop the old one. With foreign keys
                # enforced, dropping `cards` deletes its tag rows first, whose triggers then
                # write the FTS5 tag index within the DROP: "database table is locked". The
                # pragma works only outside a transaction, so it goes to the driver directly.
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
            try:
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                connection.commit()
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                    connection.commit()
                    if broken:
                        raise RuntimeError(f"The migrations left rows without their parents: {broken[:5]}")
            finally:
                if sqlite:
                    connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
                if is_postgres:
                    connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK})
                    connection.execute(text("RESET lock_timeout"))
                    connection.commit()

    def dispose(self) -> None:
        """Close every pooled connection, and from now on each connection given back (one in use
        now, or one opened by a late user): none is left open for the garbage collector."""
        self._disposed = True
        self.engine.dispose()

    def _close_once_disposed(self, dbapi_connection: Any, record: Any) -> None:
        # SQLAlchemy leaves a connection checked in after dispose() to its old pool, closed
        # only when that pool is collected (psycopg then warns that it was never closed).
        if self._disposed and dbapi_connection is not None and record is not None:
            record.invalidate()


def is_busy(exc: DBAPIError) -> bool:
    """Whether the statement failed only because other transactions held the database: run
    again, it would succeed."""
    orig = exc.orig
    if isinstance(orig, sqlite3.OperationalError):
        # Some errors carry no code (it is then 0).
        return getattr(orig, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return getattr(orig, "sqlstate", None) in _BUSY_SQLSTATES


def is_full(exc: DBAPIError) -> bool:
    """Whether the statement found no room to write: SQLite's disk full, PostgreSQL's disk_full
    (53100). Nothing was written; it passes once room is made."""
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        return getattr(orig, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL
    return getattr(orig, "sqlstate", None) == "53100"


# PostgreSQL: connection exceptions (08...), and the server shutting down or starting up
# (admin_shutdown, e.g. pg_terminate_backend; crash_shutdown; cannot_connect_now).
_UNREACHABLE_SQLSTATES = ("57P01", "57P02", "57P03")


def is_unreachable(exc: DBAPIError) -> bool:
    """Whether the database could not be reached or the connection to it was lost."""
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        return False
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate is None:  # psycopg: no server answer at all (refused, reset, closed)
        return type(orig).__name__ == "OperationalError"
    return str(sqlstate).startswith("08") or sqlstate in _UNREACHABLE_SQLSTATES
