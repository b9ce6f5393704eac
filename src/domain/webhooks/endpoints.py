"""An account's webhook endpoints: made, listed, changed, deleted, and their secrets rotated.

An endpoint starts at the account's last change: it is told of changes made after it exists.
The account's change counter counts its enabled endpoints, so a transaction that records
changes knows whether to announce them (cardvault.domain.changes); making one locks that row
first, so concurrent makers count the account's endpoints in turn. An endpoint belongs to the
credential that made it (an API key, or an app's grant): revoking that disables it (REVOKED)."""

from __future__ import annotations

import base64
import ipaddress
import re
import secrets
from collections.abc import Sequence
from urllib.parse import urlsplit

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from cardvault.adapters.fetcher import is_allowed
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidInput, WebhookLimitReached
from cardvault.domain.ids import new_id
from cardvault.domain.models import ApiKey, OAuthGrant, Webhook, get_owned

MAX_WEBHOOKS = 20
ROTATION_MS = 24 * 3600 * 1000  # the previous secret signs this long after a rotation
SECRET_BYTES = 32
MAX_URL_LENGTH = 2048
_PRINTABLE_ASCII = re.compile(r"[!-~]+")
EVENT_TYPES = (
    "card.created",
    "card.updated",
    "card.deleted",
    "card.processed",
    "folder.created",
    "folder.updated",
    "folder.deleted",
    "tag.updated",
    "tag.deleted",
    "tag_operation.completed",
    "tag_operation.failed",
    "export.ready",
    "export.failed",
    "annotation.created",
    "annotation.updated",
    "annotation.deleted",
    "share.created",
    "share.updated",
    "share.deleted",
    "subscription.created",
    "subscription.updated",
    "subscription.deleted",
)
ALL = "*"


def new_secret() -> str:
    """A signing secret as Standard Webhooks shows one: ``whsec_`` and base64 of random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _invalid(field: str, message: str) -> InvalidInput:
    return InvalidInput(
        f"{field} {message}.", details={"fields": [{"location": "body", "field": field, "message": message}]}
    )


def check_url(url: str, *, ports: Sequence[int], allow_loopback: bool) -> str:
    """The endpoint URL, or InvalidInput saying what is wrong: HTTPS (plain HTTP only to a
    loopback address in the tests' loopback mode), a host, no user name or password, an allowed
    port, and no address that is not public written in it. Names are resolved, and every
    address checked, when each delivery is sent (cardvault.adapters.fetcher)."""
    if len(url) > MAX_URL_LENGTH:
        raise _invalid("url", f"must be at most {MAX_URL_LENGTH} characters")
    if not _PRINTABLE_ASCII.fullmatch(url):
        raise _invalid("url", "must be ASCII without spaces (an international name in its xn-- form)")
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower(), 0)
    except ValueError:
        raise _invalid("url", "must be an absolute https URL") from None
    host = parts.hostname
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise _invalid("url", "must be an absolute https URL")
    if parts.username is not None or parts.password is not None:
        raise _invalid("url", "must not hold a user name or password")
    try:
        literal = ipaddress.ip_address(host) is not None
    except ValueError:
        literal = False
    loopback = host == "localhost" or (literal and ipaddress.ip_address(host).is_loopback)
    if loopback and not allow_loopback:
        raise _invalid("url", "must not point at this machine")
    if literal and not is_allowed(host, allow_loopback=allow_loopback):
        raise _invalid("url", "must point at a public address")
    if parts.scheme.lower() != "https" and not (allow_loopback and loopback):
        raise _invalid("url", "must be an https URL")
    if port not in ports:
        raise _invalid("url", f"must use port {' or '.join(map(str, ports))}")
    return url


def check_events(events: Sequence[str]) -> list[str]:
    """The event types an endpoint takes: known ones, each once, or ``["*"]`` for all."""
    unknown = [e for e in events if e != ALL and e not in EVENT_TYPES]
    if unknown:
        raise _invalid("events", f"has unknown event types: {', '.join(sorted(set(unknown))[:5])}")
    if ALL in events and len(set(events)) > 1:
        raise _invalid("events", 'must be ["*"] alone or a list of event types')
    return list(dict.fromkeys(events))


# Events added in 1.3.0 and since reach only an endpoint that names them: "*" keeps meaning the events
# there were before (the spec's Compatibility: values added to a response enum reach only
# clients that name them).
NAMED_ONLY = frozenset(
    {
        *("annotation.created", "annotation.updated", "annotation.deleted"),  # 1.3.0
        *("share.created", "share.updated", "share.deleted"),  # 1.4.0
        *("subscription.created", "subscription.updated", "subscription.deleted"),
    }
)


def subscribed(webhook: Webhook, event: str) -> bool:
    return event in webhook.events or (ALL in webhook.events and event not in NAMED_ONLY)


_COUNT_HOOKS = text(
    "INSERT INTO change_counters (account_id, last_sequence, purged_through, webhooks) "
    "VALUES (:account, 0, 0, :delta) "
    "ON CONFLICT (account_id) DO UPDATE SET webhooks = change_counters.webhooks + :delta "
    "RETURNING last_sequence"
)


def _count(session: Session, account_id: str, delta: int) -> int:
    """Move the account's count of enabled endpoints (its counter row locked until COMMIT, as a
    writer recording changes holds it) and answer its last change sequence."""
    return int(session.execute(_COUNT_HOOKS, {"account": account_id, "delta": delta}).scalar_one())


def create(
    session: Session,
    *,
    account_id: str,
    url: str,
    events: list[str],
    description: str,
    credential_id: str | None = None,
) -> tuple[Webhook, str]:
    """Make an endpoint, enabled, belonging to ``credential_id`` (the API key or grant the
    request came with), and answer it with its secret (shown this once)."""
    # Counted first: the counter row stays locked until COMMIT, so the count below sees every
    # endpoint another maker committed (read committed), and twenty at once cannot make 21.
    position = _count(session, account_id, 1)
    held = session.scalar(select(func.count()).select_from(Webhook).where(Webhook.account_id == account_id))
    if (held or 0) >= MAX_WEBHOOKS:
        raise WebhookLimitReached(
            f"An account keeps at most {MAX_WEBHOOKS} webhooks: delete one first.",
            details={"limit": MAX_WEBHOOKS},
        )
    now, secret = now_ms(), new_secret()
    webhook = Webhook(
        id=new_id("whk"),
        account_id=account_id,
        url=url,
        events=events,
        description=description,
        secret=secret,
        enabled=True,
        position=position,  # told of what changes from now on
        credential_id=credential_id,
        created_at=now,
        updated_at=now,
    )
    session.add(webhook)
    session.flush()
    return webhook, secret


def get(session: Session, *, account_id: str, webhook_id: str, for_update: bool = False) -> Webhook:
    return get_owned(session, Webhook, row_id=webhook_id, account_id=account_id, for_update=for_update)


def list_all(session: Session, *, account_id: str) -> list[Webhook]:
    """The account's endpoints, oldest first (at most MAX_WEBHOOKS)."""
    query = select(Webhook).where(Webhook.account_id == account_id).order_by(Webhook.created_at, Webhook.id)
    return list(session.scalars(query))


def update(
    session: Session,
    *,
    account_id: str,
    webhook_id: str,
    url: str | None = None,
    events: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
    credential_id: str | None = None,
) -> Webhook:
    """Change an endpoint. Enabling a disabled one starts it again from the account's last
    change (what changed while it was off is in the changes feed), and makes it belong to
    ``credential_id``, the credential that enabled it."""
    webhook = get(session, account_id=account_id, webhook_id=webhook_id, for_update=True)
    if url is not None:
        webhook.url = url
    if events is not None:
        webhook.events = events
    if description is not None:
        webhook.description = description
    if enabled is not None and enabled != webhook.enabled:
        set_enabled(session, webhook, enabled, reason=None if enabled else "USER")
        if enabled:
            webhook.credential_id = credential_id
    webhook.updated_at = max(now_ms(), webhook.updated_at)
    return webhook


def set_enabled(session: Session, webhook: Webhook, enabled: bool, *, reason: str | None) -> None:
    """Enable or disable an endpoint (``reason``: USER, GONE after a 410, FAILING after its
    last retry, REVOKED with its credential), keeping the account's count of enabled
    endpoints."""
    if webhook.enabled == enabled:
        return
    last = _count(session, webhook.account_id, 1 if enabled else -1)
    now = now_ms()
    webhook.enabled, webhook.updated_at = enabled, max(now, webhook.updated_at)
    if enabled:
        webhook.disabled_reason = webhook.disabled_at = webhook.paused_until = None
        webhook.position = last
    else:
        webhook.disabled_reason, webhook.disabled_at = reason, now


def disable_revoked(session: Session, *, account_id: str) -> None:
    """Disable (REVOKED) the account's enabled endpoints whose API key or grant is revoked:
    called by every revocation, in its transaction."""
    hooks = session.scalars(
        select(Webhook)
        .where(
            Webhook.account_id == account_id, Webhook.enabled.is_(True), Webhook.credential_id.is_not(None)
        )
        .order_by(Webhook.id)
        .with_for_update()
    ).all()
    held = {hook.credential_id for hook in hooks}
    revoked = set(
        session.scalars(select(ApiKey.id).where(ApiKey.id.in_(held), ApiKey.revoked_at.is_not(None)))
    ) | set(
        session.scalars(
            select(OAuthGrant.id).where(OAuthGrant.id.in_(held), OAuthGrant.revoked_at.is_not(None))
        )
    )
    for hook in hooks:
        if hook.credential_id in revoked:
            set_enabled(session, hook, False, reason="REVOKED")


def delete(session: Session, *, account_id: str, webhook_id: str) -> None:
    """Delete an endpoint and its deliveries; none is sent after this commits."""
    webhook = get(session, account_id=account_id, webhook_id=webhook_id, for_update=True)
    if webhook.enabled:
        _count(session, account_id, -1)
    session.delete(webhook)


def rotate_secret(session: Session, *, account_id: str, webhook_id: str) -> tuple[Webhook, str]:
    """Give the endpoint a new secret; the one before keeps signing for ROTATION_MS beside it
    (a second rotation within that time ends the oldest one at once)."""
    webhook = get(session, account_id=account_id, webhook_id=webhook_id, for_update=True)
    now, secret = now_ms(), new_secret()
    webhook.previous_secret, webhook.previous_until = webhook.secret, now + ROTATION_MS
    webhook.secret, webhook.updated_at = secret, max(now, webhook.updated_at)
    return webhook, secret


def signing_secrets(webhook: Webhook, now: int) -> list[str]:
    """The secrets that sign a delivery now: the current one, and the previous one for a day
    after a rotation."""
    kept = webhook.previous_secret is not None and (webhook.previous_until or 0) > now
    return [webhook.secret, *([webhook.previous_secret] if kept and webhook.previous_secret else [])]
