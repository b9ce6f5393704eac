"""Accounts and their API keys: issuing a key and finding the account a key belongs to."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import zlib

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.errors import Conflict, InvalidInput, NotFound
from cardvault.domain.ids import new_id
from cardvault.domain.models import Account, ApiKey
from cardvault.domain.tags import tag_key

KEY_PREFIX = "cvk_"
_ALPHABET = string.digits + string.ascii_letters
_SECRET_LENGTH = 30  # 30 base62 characters: 178 bits
_CHECKSUM_LENGTH = 6  # base62 of a CRC32: 62**6 > 2**32
_KEY_SHAPE = re.compile(rf"{KEY_PREFIX}[0-9A-Za-z]{{{_SECRET_LENGTH + _CHECKSUM_LENGTH}}}")


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def _checksum(secret: str) -> str:
    return _base62(zlib.crc32(f"{KEY_PREFIX}{secret}".encode()), _CHECKSUM_LENGTH)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def is_well_formed_key(key: str) -> bool:
    """Say whether a string has the shape and checksum of an API key; no database needed."""
    if _KEY_SHAPE.fullmatch(key) is None:
        return False
    secret, checksum = key[len(KEY_PREFIX) : -_CHECKSUM_LENGTH], key[-_CHECKSUM_LENGTH:]
    return hmac.compare_digest(checksum, _checksum(secret))


def create_account(session: Session, *, name: str) -> Account:
    """Create an account with a unique name (compared ignoring case)."""
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise InvalidInput("An account name is 1 to 200 characters.")
    account = Account(id=new_id("acc"), name=name, name_key=tag_key(name), created_at=now_ms())
    try:
        with session.begin_nested():
            session.add(account)
    except IntegrityError:
        raise Conflict(f"An account named {name!r} exists.") from None
    return account


def find_account(session: Session, *, name_or_id: str) -> Account:
    """Return the account with this id or name."""
    account = session.scalar(
        select(Account).where((Account.id == name_or_id) | (Account.name_key == tag_key(name_or_id.strip())))
    )
    if account is None:
        raise NotFound(f"No account is named {name_or_id!r}.")
    return account


def issue_api_key(session: Session, *, account_id: str) -> str:
    """Create an API key for the account and return it; only its hash is kept."""
    secret = "".join(secrets.choice(_ALPHABET) for _ in range(_SECRET_LENGTH))
    key = f"{KEY_PREFIX}{secret}{_checksum(secret)}"
    session.add(
        ApiKey(
            id=new_id("key"),
            account_id=account_id,
            secret_hash=_hash(key),
            created_at=now_ms(),
        )
    )
    return key


def account_for_key(session: Session, *, key: str) -> str | None:
    """Return the id of the account owning a live API key, or None."""
    if not is_well_formed_key(key):
        return None
    # Found by its SHA-256 (nothing of the secret is stored in clear); the digest comparison
    # below is constant-time, the index lookup only ever sees a hash.
    digest = _hash(key)
    row = session.execute(
        select(ApiKey.account_id, ApiKey.secret_hash).where(
            ApiKey.secret_hash == digest, ApiKey.revoked_at.is_(None)
        )
    ).first()
    if row is None or not hmac.compare_digest(row.secret_hash, digest):
        return None
    return str(row.account_id)
