"""API keys: issuing, listing and revoking an account's keys, and finding the account (and
scopes) a key acts for."""

from __future__ import annotations

import dataclasses
import hmac

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.orm import Session

from cardvault.domain.auth import credentials
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InsufficientScope, InvalidInput, KeyLimitReached, NotFound
from cardvault.domain.ids import new_id
from cardvault.domain.models import ApiKey
from cardvault.domain.webhooks import endpoints

LAST_CHARS = 4  # shown in listings, so a person can tell their keys apart
LAST_USED_STEP_MS = 60_000  # lastUsedAt is kept to within this much (one write a minute at most)
MAX_LIVE_KEYS = 100  # per account: keys are for programs and people, not one per request


@dataclasses.dataclass(frozen=True)
class KeyHolder:
    """Whom a live key acts for, and what it may do."""

    key_id: str
    account_id: str
    scopes: tuple[str, ...]
    last_used_at: int | None
    grant_id: str | None  # the app's grant that made it, if an app did


def check_grantable(scopes: str, *, held: str) -> None:
    """Refuse scopes that the credential creating a key does not hold itself: no credential
    makes a key that may do more than it may."""
    have = credentials.scope_list(held)
    for scope in credentials.scope_list(scopes):
        if scope not in have:
            raise InsufficientScope(scope, have)


def create_key(
    session: Session,
    *,
    account_id: str,
    name: str = "",
    scopes: str = credentials.ALL_SCOPES,
    held: str = credentials.ALL_SCOPES,
    grant_id: str | None = None,
) -> tuple[ApiKey, str]:
    """Create an API key for the account, with no scope beyond ``held`` (those of the
    credential creating it); return it with the key itself, which is never kept (only its
    hash) and so can be shown this once. A key an app makes with its access token names the
    app's grant and is revoked with it (domain.oauth)."""
    chosen = credentials.scope_list(scopes)
    if not chosen:
        raise InvalidInput("A key needs at least one scope.")
    check_grantable(scopes, held=held)
    live = session.scalar(
        select(func.count()).where(ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None))
    )
    if live is not None and live >= MAX_LIVE_KEYS:
        raise KeyLimitReached(
            f"An account keeps at most {MAX_LIVE_KEYS} live API keys: revoke one first.",
            details={"limit": MAX_LIVE_KEYS},
        )
    key = credentials.new_secret(credentials.API_KEY)
    row = ApiKey(
        id=new_id("key"),
        account_id=account_id,
        secret_hash=credentials.digest(key),
        created_at=now_ms(),
        name=name.strip(),
        last_chars=key[-LAST_CHARS:],
        scopes=" ".join(chosen),
        grant_id=grant_id,
    )
    session.add(row)
    session.flush()
    return row, key


def issue_api_key(session: Session, *, account_id: str, name: str = "") -> str:
    """Create a key holding every scope and return it (the command line's and tests' way)."""
    return create_key(session, account_id=account_id, name=name)[1]


def is_well_formed_key(key: str) -> bool:
    """Say whether a string has the shape and checksum of an API key; no database needed."""
    return credentials.is_well_formed(key, credentials.API_KEY)


# Built once, executed on the session's connection (as oauth.token_holder).
_KEY_HOLDER = select(
    ApiKey.id, ApiKey.account_id, ApiKey.secret_hash, ApiKey.scopes, ApiKey.last_used_at, ApiKey.grant_id
).where(ApiKey.secret_hash == bindparam("digest"), ApiKey.revoked_at.is_(None))


def key_holder(session: Session, *, key: str) -> KeyHolder | None:
    """Return whom a live API key acts for, or None."""
    if not is_well_formed_key(key):
        return None
    # Found by its SHA-256 (nothing of the secret is stored in clear); the digest comparison
    # below is constant-time, the index lookup only ever sees a hash.
    digest = credentials.digest(key)
    row = session.connection().execute(_KEY_HOLDER, {"digest": digest}).first()
    if row is None or not hmac.compare_digest(row.secret_hash, digest):
        return None
    return KeyHolder(
        key_id=row.id,
        account_id=row.account_id,
        scopes=tuple(credentials.scope_list(row.scopes)),
        last_used_at=row.last_used_at,
        grant_id=row.grant_id,
    )


def account_for_key(session: Session, *, key: str) -> str | None:
    """Return the id of the account owning a live API key, or None."""
    holder = key_holder(session, key=key)
    return holder.account_id if holder else None


def is_last_use_stale(holder: KeyHolder, now: int) -> bool:
    """Whether the key's lastUsedAt is older than its step (and so worth a write)."""
    return holder.last_used_at is None or now - holder.last_used_at >= LAST_USED_STEP_MS


def record_use(session: Session, *, key_id: str, now: int) -> None:
    """Move the key's lastUsedAt to now, unless another request did within the step."""
    session.execute(
        update(ApiKey)
        .where(
            ApiKey.id == key_id,
            (ApiKey.last_used_at.is_(None)) | (ApiKey.last_used_at <= now - LAST_USED_STEP_MS),
        )
        .values(last_used_at=now)
    )


def list_keys(session: Session, *, account_id: str) -> list[ApiKey]:
    """The account's live keys, newest first."""
    return list(
        session.scalars(
            select(ApiKey)
            .where(ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None))
            .order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
        )
    )


def revoke_key(session: Session, *, account_id: str, key_id: str) -> ApiKey:
    """Revoke one of the account's keys; another account's key is missing, as is a revoked one."""
    row = session.scalar(
        select(ApiKey).where(
            ApiKey.id == key_id, ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None)
        )
    )
    if row is None:
        raise NotFound("No such API key.")
    row.revoked_at = now_ms()
    session.flush()
    endpoints.disable_revoked(session, account_id=account_id)  # the webhooks it made end with it
    return row
