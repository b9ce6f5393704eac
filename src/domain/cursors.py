"""Opaque, signed page cursors: a position in a listing, bound to the query that made it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cardvault.domain.errors import InvalidCursor

_SIGNATURE_BYTES = 16


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _b64decode(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _sign(secret: str, scope: str, payload: str) -> str:
    mac = hmac.new(secret.encode(), f"{scope}\n{payload}".encode(), hashlib.sha256)
    return _b64encode(mac.digest()[:_SIGNATURE_BYTES])


def encode_cursor(secret: str, *, scope: str, position: list[int | str]) -> str:
    """Return a cursor for a position; it is only valid for the same scope."""
    payload = _b64encode(json.dumps(position, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{payload}.{_sign(secret, scope, payload)}"


def decode_cursor(secret: str, token: str, *, scope: str, size: int | tuple[int, ...]) -> list[int | str]:
    """Return the position in a cursor (of ``size`` values, or one of the sizes given), or raise
    InvalidCursor if it is not one of ours for this scope."""
    sizes = (size,) if isinstance(size, int) else size
    payload, _, signature = token.partition(".")
    if not hmac.compare_digest(signature.encode(), _sign(secret, scope, payload).encode()):
        raise InvalidCursor(
            "The cursor is not valid for this query: pass back pageInfo.nextCursor unchanged, "
            "with the same filters and sort."
        )
    position = json.loads(_b64decode(payload))
    if not (
        isinstance(position, list) and len(position) in sizes and all(type(v) in (int, str) for v in position)
    ):
        raise InvalidCursor("The cursor is not valid.")
    return position


Row = TypeVar("Row", bound=Any)


def newest_first(
    session: Session, model: type[Row], *, account_id: str, secret: str, limit: int, cursor: str | None
) -> tuple[list[Row], str | None, int]:
    """One page of the account's rows of ``model`` (with ``account_id``, ``created_at`` and
    ``id`` columns), newest first; its next cursor and the total. The cursor holds the last
    row's time and id, so rows made or deleted meanwhile never shift the next page."""
    mine = model.account_id == account_id
    total = session.scalar(select(func.count()).select_from(model).where(mine)) or 0
    query = select(model).where(mine).order_by(model.created_at.desc(), model.id.desc())
    scope = f"{model.__tablename__}:{account_id}"
    if cursor is not None:
        moment, last = decode_cursor(secret, cursor, scope=scope, size=2)
        query = query.where((model.created_at < moment) | ((model.created_at == moment) & (model.id < last)))
    found = list(session.scalars(query.limit(limit + 1)))
    next_cursor = None
    if len(found) > limit:
        found = found[:limit]
        next_cursor = encode_cursor(secret, scope=scope, position=[found[-1].created_at, found[-1].id])
    return found, next_cursor, total
