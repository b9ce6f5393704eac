"""Opaque, signed page cursors: a position in a listing, bound to the query that made it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

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
