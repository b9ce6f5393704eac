"""Opaque ids: a short type prefix and 128 random bits."""

import base64
import re
import secrets

# What any id of ours looks like (the spec's Id schema); nothing else can name a row.
_ID_FORM = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_id(prefix: str) -> str:
    """Return a fresh id such as ``crd_k7q2m4x8c3n5v9b1z6h0w2j4ra``."""
    random_part = base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()
    return f"{prefix}_{random_part}"


def is_well_formed(candidate: str) -> bool:
    """Say whether a string has the form of an id, so it is worth looking up."""
    return _ID_FORM.fullmatch(candidate) is not None
