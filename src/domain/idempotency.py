"""Idempotency-Key: the first successful response to a request sent with a key is kept for
24 hours and replayed when the same request comes again with the key. Keys are per account.

A key is held while its first request runs: by this process (the caller's in-flight set) and,
on PostgreSQL, by a transaction-scoped advisory lock that every process sees. The response is
recorded in the transaction that does the request's work, so the two commit together: a crash
leaves neither, and the key is free again."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import delete, select, text, tuple_
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from cardvault.domain.models import IdempotencyKey

KEEP_MS = 24 * 3600 * 1000
_KEY_LOCKS = 4_275_003  # pg_advisory_xact_lock space of Idempotency-Keys (see db.py for others)
_TRY_LOCK = text("SELECT pg_try_advisory_xact_lock(CAST(:space AS integer), CAST(:key AS integer))")


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


def find(session: Session, *, account_id: str, key: str, fingerprint: str) -> StoredResponse | None:
    """The response kept for the key, or None; IdempotencyKeyReused when the key was used for
    another request."""
    row = session.get(IdempotencyKey, (account_id, key))
    if row is None or row.created_at < now_ms() - KEEP_MS:
        return None
    if row.fingerprint != fingerprint:
        raise IdempotencyKeyReused()
    return StoredResponse(status=row.status, body=row.body, headers=dict(row.headers))


def hold(session: Session, *, account_id: str, key: str) -> None:
    """Hold the key until the transaction ends, or raise IdempotencyKeyInUse when another
    process's transaction holds it (PostgreSQL; SQLite runs one writer at a time)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    digest = hashlib.sha256(f"{account_id}\x00{key}".encode()).digest()
    lock_key = int.from_bytes(digest[:4], "big", signed=True)
    if not session.scalar(_TRY_LOCK, {"space": _KEY_LOCKS, "key": lock_key}):
        raise IdempotencyKeyInUse()


def record(
    session: Session, *, account_id: str, key: str, fingerprint: str, response: StoredResponse
) -> None:
    """Keep the response for the key (replacing an expired one not swept yet)."""
    session.execute(
        delete(IdempotencyKey).where(IdempotencyKey.account_id == account_id, IdempotencyKey.key == key)
    )
    session.add(
        IdempotencyKey(
            account_id=account_id,
            key=key,
            fingerprint=fingerprint,
            status=response.status,
            body=response.body,
            headers=response.headers,
            created_at=now_ms(),
        )
    )
    session.flush()


def forget_expired(session: Session, *, batch_size: int) -> int:
    """Delete up to batch_size keys older than 24 hours; return how many."""
    expired = (
        select(IdempotencyKey.account_id, IdempotencyKey.key)
        .where(IdempotencyKey.created_at < now_ms() - KEEP_MS)
        .limit(batch_size)
    )
    pk = tuple_(IdempotencyKey.account_id, IdempotencyKey.key)
    return session.execute(delete(IdempotencyKey).where(pk.in_(expired))).rowcount
