"""Secrets handed to clients (API keys, access and refresh tokens, session cookies): a fixed
prefix naming the kind, 30 random base62 characters (178 bits) and a CRC32 checksum, so a
mistyped or made-up value is refused without a database and secret scanners can find leaked
ones. Only their SHA-256 is stored."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import zlib

# The prefixes (not secrets themselves).
API_KEY = "cvk_"
ACCESS_TOKEN = "cva_"  # noqa: S105
REFRESH_TOKEN = "cvr_"  # noqa: S105
AUTHORIZATION_CODE = "cvo_"
SESSION = "cvs_"
SIGN_IN_LINK = "cvl_"
CLIENT_SECRET = "cvx_"  # noqa: S105
SHARE = "cvh_"  # a share link's token (cardvault.domain.shares)

_ALPHABET = string.digits + string.ascii_letters
_SECRET_LENGTH = 30
_CHECKSUM_LENGTH = 6  # base62 of a CRC32: 62**6 > 2**32
_SHAPE = re.compile(rf"cv[a-z]_[0-9A-Za-z]{{{_SECRET_LENGTH + _CHECKSUM_LENGTH}}}")
LENGTH = 4 + _SECRET_LENGTH + _CHECKSUM_LENGTH


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def _checksum(prefix: str, secret: str) -> str:
    return _base62(zlib.crc32(f"{prefix}{secret}".encode()), _CHECKSUM_LENGTH)


def new_secret(prefix: str) -> str:
    """A fresh random secret of the kind ``prefix`` names."""
    secret = "".join(secrets.choice(_ALPHABET) for _ in range(_SECRET_LENGTH))
    return f"{prefix}{secret}{_checksum(prefix, secret)}"


def is_well_formed(value: str, prefix: str) -> bool:
    """Whether ``value`` has the shape and checksum of a secret of the kind ``prefix``."""
    if not value.startswith(prefix) or _SHAPE.fullmatch(value) is None:
        return False
    secret, checksum = value[len(prefix) : -_CHECKSUM_LENGTH], value[-_CHECKSUM_LENGTH:]
    return hmac.compare_digest(checksum, _checksum(prefix, secret))


def digest(value: str) -> str:
    """The SHA-256 (hex) a secret is stored and found by."""
    return hashlib.sha256(value.encode()).hexdigest()


# What a credential may do. An API key holds any of them; an OAuth client asks for those it was
# registered with, and the account grants them on the consent page.
SCOPES = {
    "read": "Read cards, tags, folders, Trash and exports",
    "write": "Create, change and delete cards, tags and folders; start exports",
    "keys": "List, create and revoke API keys",
}
ALL_SCOPES = " ".join(SCOPES)


def scope_list(text: str) -> list[str]:
    """The scopes a space-separated string names, in their canonical order, unknown ones dropped."""
    named = set(text.split())
    return [scope for scope in SCOPES if scope in named]
