"""Opaque ids: a short type prefix and 128 random bits."""

import base64
import secrets


def new_id(prefix: str) -> str:
    """Return a fresh id such as ``crd_k7q2m4x8c3n5v9b1z6h0w2j4ra``."""
    random_part = base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()
    return f"{prefix}_{random_part}"
