"""OAuth 2.0 records: registered clients, authorization codes (used once), grants (what an
account allowed a client: one refresh token family) and their access and refresh tokens.

Every secret is kept by its SHA-256 only. The rules that races could break are single
conditional UPDATEs: a code and a refresh token are each spent by exactly one request, and a
spent one presented again revokes its grant, with every token it issued (RFC 9700 §4.14.2;
RFC 6749 §4.1.2 for codes)."""

from __future__ import annotations

import dataclasses
import ipaddress
from urllib.parse import urlsplit

from sqlalchemy import ColumnElement, bindparam, delete, or_, select, update
from sqlalchemy.orm import Session

from cardvault.domain.auth import credentials
from cardvault.domain.db import rows_changed
from cardvault.domain.errors import InvalidInput
from cardvault.domain.ids import new_id
from cardvault.domain.models import Account, ApiKey, OAuthClient, OAuthCode, OAuthGrant, OAuthToken
from cardvault.domain.webhooks import endpoints

ACCESS_TOKEN_SECONDS = 3600
CODE_SECONDS = 120  # a browser carries the code straight back; RFC 6749 allows at most 10 minutes
REFRESH_IDLE_MS = 30 * 86_400_000  # a family unused this long ends
REFRESH_ABSOLUTE_MS = 90 * 86_400_000  # and every family ends this long after sign-in
CLIENT_SCOPES = "read write"  # what a client may ask for unless registered with more
REGISTRATION_MS = 86_400_000  # a client that registered itself and is never allowed ends then


def check_redirect_uri(uri: str) -> None:
    """Refuse a redirect URI a client may not register: it must be absolute, without a fragment
    or user information, and https, or http on a loopback address (RFC 8252 §7.3), or an app's
    own reverse-domain scheme (RFC 8252 §7.1)."""
    parts = urlsplit(uri)
    if len(uri) > 2000 or parts.fragment or "#" in uri or not parts.scheme:
        raise InvalidInput(f"{uri!r} is not an absolute redirect URI without a fragment.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        # A user name before the host (https://bank.example@evil.example/) misleads the eye.
        raise InvalidInput(f"{uri!r}: a redirect URI names no user or password.")
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and _is_loopback(parts.hostname):
        return
    if "." in parts.scheme and parts.scheme not in ("http", "https"):
        return
    raise InvalidInput(
        f"{uri!r} must be https, http on a loopback address, or an app's reverse-domain scheme."
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_client(
    session: Session,
    *,
    name: str,
    redirect_uris: list[str],
    scopes: str = CLIENT_SCOPES,
    confidential: bool = False,
    now: int,
) -> tuple[OAuthClient, str | None]:
    """Register a client; return it with its secret (confidential clients only), shown once."""
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise InvalidInput("A client's name is 1 to 100 characters.")
    if not redirect_uris:
        raise InvalidInput("A client needs at least one redirect URI.")
    for uri in redirect_uris:
        check_redirect_uri(uri)
    chosen = credentials.scope_list(scopes)
    if not chosen:
        raise InvalidInput(f"Name at least one scope of: {credentials.ALL_SCOPES}.")
    secret = credentials.new_secret(credentials.CLIENT_SECRET) if confidential else None
    client = OAuthClient(
        id=new_id("cli"),
        name=name,
        redirect_uris=list(dict.fromkeys(redirect_uris)),
        scopes=" ".join(chosen),
        secret_hash=credentials.digest(secret) if secret else None,
        created_at=now,
    )
    session.add(client)
    session.flush()
    return client, secret


def register_client(
    session: Session, *, name: str, redirect_uris: list[str], scopes: str, now: int
) -> OAuthClient:
    """Register a client that asked for itself (RFC 7591): public (PKCE, no secret), its
    redirect URIs https or http on a loopback address only, at most the default scopes, and
    ending after REGISTRATION_MS unless an account allows it first."""
    for uri in redirect_uris:
        check_redirect_uri(uri)
        if urlsplit(uri).scheme not in ("http", "https"):
            raise InvalidInput(
                f"{uri!r}: a client registering itself returns to https or a loopback address."
            )
    asked = credentials.scope_list(scopes) if scopes else CLIENT_SCOPES.split()
    allowed = [s for s in asked if s in CLIENT_SCOPES.split()]
    client, _ = create_client(
        session, name=name, redirect_uris=redirect_uris, scopes=" ".join(allowed) or CLIENT_SCOPES, now=now
    )
    client.expires_at = now + REGISTRATION_MS
    client.registered_dynamically = True
    return client


def find_client(session: Session, *, client_id: str) -> OAuthClient | None:
    """The client with this id, or None."""
    if len(client_id) > 64 or "\x00" in client_id:  # PostgreSQL refuses NUL in text
        return None
    return session.get(OAuthClient, client_id)


def save_code(
    session: Session,
    *,
    code: str,
    client_id: str,
    account_id: str,
    redirect_uri: str,
    scopes: str,
    code_challenge: str,
    now: int,
    resource: str | None = None,
) -> None:
    """Keep an authorization code the account just approved (for ``resource``, RFC 8707)."""
    session.add(
        OAuthCode(
            code_hash=credentials.digest(code),
            client_id=client_id,
            account_id=account_id,
            redirect_uri=redirect_uri,
            scopes=scopes,
            code_challenge=code_challenge,
            resource=resource,
            created_at=now,
            expires_at=now + CODE_SECONDS * 1000,
        )
    )


def is_known(session: Session, *, value: str) -> bool:
    """Whether an authorization code, refresh token or access token is kept (live or not): a
    request naming one that is not changes nothing, so it is answered without a write."""
    digest = credentials.digest(value)
    return (
        session.get(OAuthCode, digest) is not None
        or session.scalar(select(OAuthToken.token_hash).where(OAuthToken.token_hash == digest)) is not None
    )


def spend_code(session: Session, *, code: str, client_id: str, now: int) -> OAuthCode | None:
    """Use an authorization code of this client once: return it, or None when it is unknown,
    expired or another client's. A code used before revokes the grant its first use started."""
    if not credentials.is_well_formed(code, credentials.AUTHORIZATION_CODE):
        return None
    digest = credentials.digest(code)
    if session.get(OAuthCode, digest) is None:
        return None  # nothing to spend: no statement that writes
    spent = rows_changed(
        session,
        update(OAuthCode)
        .where(
            OAuthCode.code_hash == digest,
            OAuthCode.client_id == client_id,
            OAuthCode.used_at.is_(None),
            OAuthCode.expires_at > now,
        )
        .values(used_at=now),
    )
    row = session.get(OAuthCode, digest)
    if spent == 1:
        return row
    if row is not None and row.client_id == client_id and row.used_at is not None and row.grant_id:
        revoke_grant(session, grant_id=row.grant_id, now=now)
    return None


@dataclasses.dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    scopes: str


def start_grant(
    session: Session, *, account_id: str, client_id: str, scopes: str, now: int, code: OAuthCode | None = None
) -> OAuthGrant:
    """Record what the account allowed the client (a new refresh token family), for the
    resource its code was asked for; a client that registered itself is kept from then on."""
    grant = OAuthGrant(
        id=new_id("grt"),
        account_id=account_id,
        client_id=client_id,
        scopes=scopes,
        resource=code.resource if code is not None else None,
        created_at=now,
        refreshed_at=now,
    )
    session.add(grant)
    session.execute(update(OAuthClient).where(OAuthClient.id == client_id).values(expires_at=None))
    if code is not None:
        code.grant_id = grant.id
    session.flush()
    return grant


def add_tokens(
    session: Session,
    *,
    grant: OAuthGrant,
    access_token: str,
    refresh_token: str,
    access_scopes: str,
    now: int,
) -> None:
    """Keep a new access token (with the scopes asked for, at most the grant's) and refresh
    token (with the grant's) of the grant."""
    granted = set(grant.scopes.split())
    access_scopes = " ".join(s for s in credentials.scope_list(access_scopes) if s in granted)
    refresh_ends = min(now + REFRESH_IDLE_MS, grant.created_at + REFRESH_ABSOLUTE_MS)
    session.add_all(
        [
            OAuthToken(
                token_hash=credentials.digest(access_token),
                grant_id=grant.id,
                kind="access",
                scopes=access_scopes,
                created_at=now,
                expires_at=now + ACCESS_TOKEN_SECONDS * 1000,
            ),
            OAuthToken(
                token_hash=credentials.digest(refresh_token),
                grant_id=grant.id,
                kind="refresh",
                scopes=grant.scopes,
                created_at=now,
                expires_at=refresh_ends,
            ),
        ]
    )
    grant.refreshed_at = now


def refresh_token_grant(session: Session, *, token: str, client_id: str) -> OAuthGrant | None:
    """The live grant of a refresh token of this client, spent or not, changing nothing (to
    check a request before the token is spent)."""
    if not credentials.is_well_formed(token, credentials.REFRESH_TOKEN):
        return None
    grant = session.scalar(
        select(OAuthGrant)
        .join(OAuthToken, OAuthToken.grant_id == OAuthGrant.id)
        .where(OAuthToken.token_hash == credentials.digest(token), OAuthToken.kind == "refresh")
    )
    if grant is None or grant.client_id != client_id or grant.revoked_at is not None:
        return None
    return grant


def spend_refresh_token(
    session: Session, *, token: str, client_id: str, now: int, grant: OAuthGrant | None = None
) -> OAuthGrant | None:
    """Use a refresh token of this client once: return its live grant, or None. A token spent
    before revokes its grant: whoever holds the newer tokens, one of the two is not the client.
    ``grant``: the token's grant, when ``refresh_token_grant`` found it already."""
    grant = grant or refresh_token_grant(session, token=token, client_id=client_id)
    if grant is None:
        return None
    digest = credentials.digest(token)
    spent = rows_changed(
        session,
        update(OAuthToken)
        .where(OAuthToken.token_hash == digest, OAuthToken.spent_at.is_(None), OAuthToken.expires_at > now)
        .values(spent_at=now),
    )
    if spent == 1:
        return grant
    if session.scalar(select(OAuthToken.spent_at).where(OAuthToken.token_hash == digest)) is not None:
        revoke_grant(session, grant_id=grant.id, now=now)
    return None


def revoke_grant(session: Session, *, grant_id: str, now: int) -> None:
    """End a grant: none of its tokens, nor any API key the app made with them, works any more."""
    session.execute(
        update(OAuthGrant)
        .where(OAuthGrant.id == grant_id, OAuthGrant.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    _revoke_keys(session, ApiKey.grant_id == grant_id, now)
    account_id = session.scalar(select(OAuthGrant.account_id).where(OAuthGrant.id == grant_id))
    if account_id is not None:  # the webhooks the app made end with its grant
        endpoints.disable_revoked(session, account_id=account_id)


def _revoke_keys(session: Session, condition: ColumnElement[bool], now: int) -> None:
    session.execute(update(ApiKey).where(condition, ApiKey.revoked_at.is_(None)).values(revoked_at=now))


def revoke_account_grants(session: Session, *, account_id: str, now: int) -> None:
    """End every grant of the account (its password changed), with the API keys apps made, and
    spend its codes not yet exchanged (a code approved a moment before must not start one)."""
    session.execute(
        update(OAuthCode)
        .where(OAuthCode.account_id == account_id, OAuthCode.used_at.is_(None), OAuthCode.expires_at > now)
        .values(used_at=now)
    )
    session.execute(
        update(OAuthGrant)
        .where(OAuthGrant.account_id == account_id, OAuthGrant.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    _revoke_keys(session, (ApiKey.account_id == account_id) & ApiKey.grant_id.is_not(None), now)
    endpoints.disable_revoked(session, account_id=account_id)


def revoke_token(session: Session, *, token: str, client_id: str, now: int) -> None:
    """RFC 7009: a refresh token ends its grant; an access token ends alone. Another client's
    token, or no token of ours, changes nothing (and the answer is the same)."""
    digest = credentials.digest(token)
    row = session.execute(
        select(OAuthToken.kind, OAuthGrant.id, OAuthGrant.client_id)
        .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
        .where(OAuthToken.token_hash == digest)
    ).first()
    if row is None or row.client_id != client_id:
        return
    if row.kind == "refresh":
        revoke_grant(session, grant_id=row.id, now=now)
    else:
        session.execute(
            update(OAuthToken)
            .where(OAuthToken.token_hash == digest, OAuthToken.revoked_at.is_(None))
            .values(revoked_at=now)
        )


@dataclasses.dataclass(frozen=True)
class TokenHolder:
    """Whom a live access token acts for, what it may do, and until when."""

    account_id: str
    scopes: tuple[str, ...]
    expires_at: int
    grant_id: str
    resource: str | None = None  # RFC 8707: the audience it was issued for


# Built once: the statement's construction cost twice its execution (bench_auth). Executed on
# the session's connection, without the ORM's result handling.
_TOKEN_HOLDER = (
    select(
        OAuthGrant.account_id, OAuthToken.scopes, OAuthToken.expires_at, OAuthGrant.id, OAuthGrant.resource
    )
    .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
    .where(
        OAuthToken.token_hash == bindparam("digest"),
        OAuthToken.kind == "access",
        OAuthToken.revoked_at.is_(None),
        OAuthToken.expires_at > bindparam("now"),
        OAuthGrant.revoked_at.is_(None),
    )
)


def token_holder(session: Session, *, token: str, now: int) -> TokenHolder | None:
    """Whom a live access token acts for, or None (unknown, expired, revoked)."""
    if not credentials.is_well_formed(token, credentials.ACCESS_TOKEN):
        return None
    row = (
        session.connection().execute(_TOKEN_HOLDER, {"digest": credentials.digest(token), "now": now}).first()
    )
    if row is None:
        return None
    return TokenHolder(
        account_id=row.account_id,
        scopes=tuple(credentials.scope_list(row.scopes)),
        expires_at=row.expires_at,
        grant_id=row.id,
        resource=row.resource,
    )


def account_name(session: Session, *, account_id: str) -> str | None:
    """The account's name, shown on the consent page."""
    return session.scalar(select(Account.name).where(Account.id == account_id))


def forget_expired(session: Session, *, now: int) -> None:
    """Delete what can no longer be used: codes a day past their end (kept that long to catch a
    replay), ended tokens, grants revoked or past their end a day ago (the API keys their apps
    made are revoked then, if they were not already), and clients that registered themselves
    and were never allowed."""
    day = 86_400_000
    session.execute(delete(OAuthCode).where(OAuthCode.expires_at < now - day))
    session.execute(delete(OAuthToken).where(OAuthToken.expires_at < now))
    ended = select(OAuthGrant.id).where(
        or_(
            OAuthGrant.revoked_at < now - day,
            OAuthGrant.refreshed_at < now - REFRESH_IDLE_MS - day,
            OAuthGrant.created_at < now - REFRESH_ABSOLUTE_MS - day,
        )
    )
    _revoke_keys(session, ApiKey.grant_id.in_(ended), now)  # a grant that ran out ends its keys
    session.execute(delete(OAuthGrant).where(OAuthGrant.id.in_(ended)))
    # Clients that registered themselves and were never allowed (codes of theirs go with them).
    session.execute(delete(OAuthClient).where(OAuthClient.expires_at < now))
