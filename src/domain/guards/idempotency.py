"""Idempotency-Key: the first successful response to a request sent with a key is kept for
24 hours and replayed when the same request comes again with the key. Keys are per account.

A key is held while its first request runs: by this process (the caller's in-flight set) and,
on PostgreSQL, by a transaction-scoped advisory lock that every process sees. The response is
recorded in the transaction that does the request's work, so the two commit together: a crash
leaves neither, and the key is free again. A keyed request costs two statements: ``claim``
(take the lock and read the key) and ``record``."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import zlib
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import delete, select, tuple_
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.db import rows_changed
from cardvault.domain.errors import IdempotencyKeyInUse, IdempotencyKeyReused, ServiceBusy
from cardvault.domain.models import IdempotencyKey

KEEP_MS = 24 * 3600 * 1000
_COLUMNS = "k.fingerprint, k.status, k.body, CAST(k.headers AS TEXT), k.created_at"  # in this order
_CLAIM = {
    # The lock is a 64-bit hash in the one-bigint lock space, apart from the two-integer space
    # of the tag locks (the only other bigint lock, the migrations', is one value of 2**64).
    # The row is read in the same statement, so with the snapshot taken before the lock: a first
    # request that commits in between is caught by record (below).
    "postgresql": (
        f"SELECT pg_try_advisory_xact_lock(CAST(:lock AS bigint)) AS held, {_COLUMNS} FROM (SELECT 1) AS one "
        "LEFT JOIN idempotency_keys AS k ON k.account_id = :account_id AND k.key = :key"
    ),
    # SQLite runs one writer at a time: nothing to hold.
    "sqlite": (
        f"SELECT 1 AS held, {_COLUMNS} FROM (SELECT 1) AS one "
        "LEFT JOIN idempotency_keys AS k ON k.account_id = :account_id AND k.key = :key"
    ),
}
# Insert the response, or replace a row that has expired; a live row (a first request that
# committed after claim read) makes it insert nothing.
_RECORD = (
    "INSERT INTO idempotency_keys (account_id, key, fingerprint, status, body, headers, created_at) "
    "VALUES (:account_id, :key, :fingerprint, :status, :body, :headers, :created_at) "
    "ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
    "status = excluded.status, body = excluded.body, headers = excluded.headers, "
    "created_at = excluded.created_at WHERE idempotency_keys.created_at < :expired_before "
    "RETURNING 1"
)


@functools.cache
def _for_driver(sql: str, dialect: str) -> str:
    """The SQL in the driver's own parameter style (psycopg's %(name)s; sqlite3 takes :name)."""
    return re.sub(r":(\w+)", r"%(\1)s", sql) if dialect == "postgresql" else sql


def _first(session: Session, sql: str | dict[str, str], parameters: dict[str, Any]) -> tuple[Any, ...] | None:
    """Send one statement on the session's transaction straight to the driver and return its
    first row. These two run on every keyed create; SQLAlchemy's per-execution work (an
    execution context and a result object) would cost each a third of its CPU. A driver error
    is raised as SQLAlchemy raises it (a busy database is retried like any other)."""
    connection = session.connection()
    dialect = connection.dialect
    statement = _for_driver(sql[dialect.name] if isinstance(sql, dict) else sql, dialect.name)
    cursor = connection.connection.cursor()
    try:
        cursor.execute(statement, parameters)
        return tuple(cursor.fetchone() or ()) or None
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(statement, parameters, exc, dialect.loaded_dbapi.Error) from exc
    finally:
        cursor.close()


@dataclasses.dataclass(frozen=True)
class StoredResponse:
    """A response as first sent: status, JSON body and the headers that belong to it."""

    status: int
    body: bytes
    headers: dict[str, str]


def fingerprint(operation_id: str, arguments: Mapping[str, Any]) -> str:
    """What makes two requests the same one: the operation, its path parameters and its body."""
    canonical = orjson.dumps([operation_id, arguments], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def lock_key(account_id: str, key: str) -> int:
    """The PostgreSQL advisory lock that holds an account's key."""
    digest = hashlib.sha256(f"{account_id}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def claim(session: Session, *, account_id: str, key: str, fingerprint: str) -> StoredResponse | None:
    """Hold the key until the transaction ends and return the response kept for it, or None.
    IdempotencyKeyInUse when another process's transaction holds it (PostgreSQL);
    IdempotencyKeyReused when the key was used for another request."""
    row = _first(session, _CLAIM, {"lock": lock_key(account_id, key), "account_id": account_id, "key": key})
    held, kept_fingerprint, status, body, headers, created_at = row or (False, None, None, None, None, None)
    if not held:
        raise IdempotencyKeyInUse()
    if created_at is None or created_at < now_ms() - KEEP_MS:
        return None
    if kept_fingerprint != fingerprint:
        raise IdempotencyKeyReused()
    return StoredResponse(status=status, body=zlib.decompress(body), headers=orjson.loads(headers))


def record(
    session: Session, *, account_id: str, key: str, fingerprint: str, response: StoredResponse
) -> None:
    """Keep the response for the key (replacing an expired one not swept yet). ServiceBusy when
    a first request with the key committed since ``claim`` read it: the caller's transaction
    then rolls back, and run again it replays that request's response."""
    now = now_ms()
    kept = _first(
        session,
        _RECORD,
        {
            "account_id": account_id,
            "key": key,
            "fingerprint": fingerprint,
            "status": response.status,
            # Compressed: the row goes to the WAL with the work (a card's JSON shrinks to a third).
            "body": zlib.compress(response.body, 1),
            "headers": orjson.dumps(response.headers).decode(),
            "created_at": now,
            "expired_before": now - KEEP_MS,
        },
    )
    if kept is None:
        raise ServiceBusy()


def forget_expired(session: Session, *, batch_size: int) -> int:
    """Delete up to batch_size keys older than 24 hours; return how many."""
    expired = (
        select(IdempotencyKey.account_id, IdempotencyKey.key)
        .where(IdempotencyKey.created_at < now_ms() - KEEP_MS)
        .limit(batch_size)
    )
    pk = tuple_(IdempotencyKey.account_id, IdempotencyKey.key)
    return rows_changed(session, delete(IdempotencyKey).where(pk.in_(expired)))
