"""The database as the features use it: the floor's Database (cardvault.domain.db) with the
commit-time writers installed on its write sessions, in lock order: the search vocabulary's
counts (cardvault.domain.search.vocabulary), then the changes feed's (cardvault.domain.changes),
whose change counters are the last lock a writer takes.

Every process opens its database here (cardvault.bootstrap, the CLI, tests and benchmarks), so
no write anywhere escapes the changes feed; the floor itself imports no feature."""

from __future__ import annotations

from sqlalchemy import Engine

from cardvault.domain import changes, versions
from cardvault.domain.db import AtCommit, Database
from cardvault.domain.search import vocabulary

AT_COMMIT: tuple[AtCommit, ...] = (vocabulary.install, versions.install, changes.install)


def open_database(database_url: str, *, lock_timeout_ms: int | None = None) -> Database:
    """Open the database at a sqlite:/// or postgresql+psycopg:// URL with the commit-time
    writers installed; API processes pass a lock timeout (Database.from_url)."""
    return Database.from_url(database_url, lock_timeout_ms=lock_timeout_ms, at_commit=AT_COMMIT)


def database_on(engine: Engine) -> Database:
    """The database on an engine made elsewhere, with the commit-time writers installed."""
    return Database(engine, at_commit=AT_COMMIT)
