"""Delivering an event: one attempt at a time under a lease, its outcome recorded, and the next
attempt scheduled as Standard Webhooks advises (now, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
20 h, 24 h after each failure, each ±10%: the settings' CARDVAULT_WEBHOOK_SCHEDULE).

- Any 2xx is success. 410 Gone disables the endpoint (reason GONE). Anything else, a redirect
  included (redirects are not followed), a timeout or a refused address, fails the attempt.
- 429, 502 and 504, and any ``Retry-After``, slow the endpoint down: none of its deliveries is
  attempted before the later of the schedule and ``Retry-After`` (at most a day).
- After the last attempt fails the delivery fails and the endpoint is disabled (FAILING).
- A retry asked for (``retry``) and a ping make one attempt, outside the schedule.

An endpoint's due deliveries are taken in batches under one lease and sent one after another
over one connection; the lease outlasts the batch's sending (every post ends by its deadline),
so no delivery is sent twice at once. An account's endpoints are sent to at most
``account_sends`` at a time (the endpoint row holds its batch's lease): a slow endpoint holds
that many worker threads and no more, and only its own account's deliveries wait. Attempts are
at least once: a worker that dies while sending leaves its lease to expire, and the delivery is
sent again with the same id (``webhook-id``), which receivers dedupe on."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.orm import Session

from cardvault.adapters import metrics
from cardvault.domain.clock import now_ms
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.db import after_commit, rows_changed
from cardvault.domain.errors import NotFound, WebhookDisabled
from cardvault.domain.ids import new_id
from cardvault.domain.models import Webhook, WebhookDelivery, get_owned
from cardvault.domain.webhooks import endpoints

JITTER = 0.1
MAX_PAUSE_MS = 86_400_000
LOG_KEPT = 20  # attempts kept per delivery, the latest
SLOWING = (429, 502, 504)


def sign(secret: str, message_id: str, timestamp: int, sent: str) -> str:
    """The ``v1`` signature of Standard Webhooks: base64 HMAC-SHA256, keyed by the secret's
    bytes, of ``id.timestamp.body`` (the timestamp in whole seconds)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{message_id}.{timestamp}.{sent}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What one attempt sends, and the lease it holds while it does."""

    delivery_id: str
    url: str
    body: str
    headers: dict[str, str]
    lease: str


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What an attempt met: the endpoint's status, or the error that stopped it."""

    status: int | None
    error: str | None
    duration_ms: int
    retry_after_ms: int | None = None


@dataclasses.dataclass(frozen=True)
class Batch:
    """Attempts of one endpoint's due deliveries, taken together under one lease."""

    url: str
    attempts: list[Attempt]
    full: bool  # as many as were asked for: more may be due


def _turn(session: Session, webhook_id: str, now: int, account_sends: int) -> Webhook | None:
    """The endpoint, if it may be sent to now: no batch of its own under way, and fewer than
    ``account_sends`` of its account's endpoints being sent to. The account's endpoints are
    locked (in id order, as dispatching locks them) so two takers count in turn."""
    account_id = session.scalar(select(Webhook.account_id).where(Webhook.id == webhook_id))
    if account_id is None:
        return None
    hooks = session.scalars(
        select(Webhook).where(Webhook.account_id == account_id).order_by(Webhook.id).with_for_update()
    ).all()
    sending = [hook for hook in hooks if hook.sending_until is not None and hook.sending_until > now]
    webhook = next((hook for hook in hooks if hook.id == webhook_id), None)
    if webhook is None or webhook in sending or len(sending) >= account_sends:
        return None
    return webhook


def take(
    session: Session, *, webhook_id: str, lease_ms: int, limit: int = 50, account_sends: int = 1
) -> Batch | None:
    """Take the attempts of up to ``limit`` of the endpoint's deliveries that are due and not
    held (oldest due first, then in the feed's order), answering what to send; None when there
    is nothing to send now, or when it is not the endpoint's turn (a batch of its own under way,
    or ``account_sends`` of its account's endpoints being sent to: the batch that ends hands the
    turn on, ``handed_on``). A delivery of a disabled endpoint fails (WEBHOOK_DISABLED) but a
    ping; while the endpoint is paused its deliveries wait for the pause's end, but pings and
    retries asked for."""
    now = now_ms()
    webhook = _turn(session, webhook_id, now, account_sends)
    if webhook is None:
        return None
    due_rows = session.scalars(
        select(WebhookDelivery)
        .where(
            WebhookDelivery.webhook_id == webhook_id,
            WebhookDelivery.status == "pending",
            WebhookDelivery.next_attempt_at <= now,
            (WebhookDelivery.lease_until.is_(None)) | (WebhookDelivery.lease_until < now),
        )
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.sequence, WebhookDelivery.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    paused = webhook.paused_until is not None and webhook.paused_until > now
    lease, timestamp = new_id("try"), now // 1000
    secrets = endpoints.signing_secrets(webhook, now)
    attempts = []
    for delivery in due_rows:
        if not webhook.enabled and delivery.event != "ping":
            _end(delivery, "failed", now)
            delivery.log = [*delivery.log, _entry(now, Outcome(None, "WEBHOOK_DISABLED", 0))][-LOG_KEPT:]
            continue
        if paused and not delivery.manual:
            delivery.next_attempt_at = webhook.paused_until
            continue
        delivery.lease, delivery.lease_until = lease, now + lease_ms
        signatures = " ".join(sign(secret, delivery.id, timestamp, delivery.body) for secret in secrets)
        headers = {
            "content-type": "application/json",
            "webhook-id": delivery.id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signatures,
        }
        attempts.append(Attempt(delivery.id, webhook.url, delivery.body, headers, lease))
    if not attempts:
        return None
    webhook.sending_lease, webhook.sending_until = lease, now + lease_ms
    return Batch(webhook.url, attempts, full=len(due_rows) == limit)


def settle(
    session: Session,
    webhook_id: str,
    results: Sequence[tuple[Attempt, Outcome]],
    *,
    schedule: Sequence[float],
    unsent: Sequence[Attempt] = (),
    rng: random.Random | None = None,
) -> int | None:
    """Record each attempt's outcome and schedule its next by ``schedule`` (seconds before each
    attempt, the first's included), and give back the attempts not sent; answer when the
    earliest next attempt is due (None when none is: every delivery ended, or its lease was
    lost to another attempt). The endpoint is locked first, then its deliveries, in the order
    deleting it takes them."""
    webhook = session.get(Webhook, webhook_id, with_for_update=True)
    if webhook is None:
        return None
    held = {attempt.delivery_id: attempt.lease for attempt, _ in results}
    held.update((attempt.delivery_id, attempt.lease) for attempt in unsent)
    if webhook.sending_lease in held.values():  # the endpoint's turn ends with its batch
        webhook.sending_lease = webhook.sending_until = None
    rows = {
        delivery.id: delivery
        for delivery in session.scalars(
            select(WebhookDelivery)
            .where(WebhookDelivery.id.in_(sorted(held)))
            .order_by(WebhookDelivery.id)
            .with_for_update()
        )
        if delivery.lease == held[delivery.id]
    }
    now, earliest = now_ms(), None
    for attempt in unsent:
        if attempt.delivery_id in rows:
            rows[attempt.delivery_id].lease = rows[attempt.delivery_id].lease_until = None
    for attempt, outcome in results:
        delivery = rows.get(attempt.delivery_id)
        if delivery is not None:
            next_at = _settled(session, webhook, delivery, outcome, now, schedule, rng or random)
            if next_at is not None and (earliest is None or next_at < earliest):
                earliest = next_at
    return earliest


def _settled(
    session: Session,
    webhook: Webhook,
    delivery: WebhookDelivery,
    outcome: Outcome,
    now: int,
    schedule: Sequence[float],
    rng: random.Random | Any,
) -> int | None:
    delivery.attempts += 1
    delivery.log = [*delivery.log, _entry(now, outcome)][-LOG_KEPT:]
    delivery.lease = delivery.lease_until = None
    status = outcome.status
    after_commit(session, lambda: _count(outcome))
    if status is not None and 200 <= status < 300:
        _end(delivery, "succeeded", now)
        return None
    if status == 410:
        _end(delivery, "failed", now)
        endpoints.set_enabled(session, webhook, False, reason="GONE")
        return None
    if delivery.manual:
        _end(delivery, "failed", now)
        delivery.manual = False
        return None
    if delivery.attempts >= len(schedule):
        _end(delivery, "failed", now)
        endpoints.set_enabled(session, webhook, False, reason="FAILING")
        return None
    wait = int(schedule[delivery.attempts] * 1000 * (1 + rng.uniform(-JITTER, JITTER)))
    if status in SLOWING or outcome.retry_after_ms is not None:
        pause = min(MAX_PAUSE_MS, max(wait, outcome.retry_after_ms or 0))
        webhook.paused_until = max(webhook.paused_until or 0, now + pause)
        wait = pause
    delivery.next_attempt_at, delivery.updated_at = now + wait, now
    return delivery.next_attempt_at


def _count(outcome: Outcome) -> None:
    status = outcome.status
    succeeded = status is not None and 200 <= status < 300
    metrics.WEBHOOK_ATTEMPTS.labels("succeeded" if succeeded else "gone" if status == 410 else "failed").inc()
    metrics.WEBHOOK_DURATION.observe(outcome.duration_ms / 1000)


def _end(delivery: WebhookDelivery, status: str, now: int) -> None:
    delivery.status, delivery.next_attempt_at, delivery.updated_at = status, None, now


def _entry(now: int, outcome: Outcome) -> dict[str, Any]:
    return {
        "attemptedAt": now,
        "responseStatus": outcome.status,
        "durationMs": outcome.duration_ms,
        "error": outcome.error,
    }


def due(session: Session, *, limit: int = 500) -> Sequence[str]:
    """Endpoints with a delivery whose attempt is due and not held (a lost message, a dead
    worker)."""
    return session.scalars(
        select(WebhookDelivery.webhook_id).where(*_due_and_free(now_ms())).distinct().limit(limit)
    ).all()


def handed_on(session: Session, *, webhook_id: str, limit: int = 20) -> Sequence[str]:
    """The endpoints of the webhook's account (itself included) with a delivery due and not
    held: a batch that ends sends them, as their takers found it was not their turn."""
    account_id = select(Webhook.account_id).where(Webhook.id == webhook_id).scalar_subquery()
    return session.scalars(
        select(WebhookDelivery.webhook_id)
        .where(
            WebhookDelivery.webhook_id.in_(select(Webhook.id).where(Webhook.account_id == account_id)),
            *_due_and_free(now_ms()),
        )
        .distinct()
        .limit(limit)
    ).all()


def _due_and_free(now: int) -> tuple[ColumnElement[bool], ...]:
    """A pending delivery whose attempt is due and whose lease (if any) has run out."""
    return (
        WebhookDelivery.status == "pending",
        WebhookDelivery.next_attempt_at <= now,
        (WebhookDelivery.lease_until.is_(None)) | (WebhookDelivery.lease_until < now),
    )


PURGE_BATCH = 1000


def purge(session: Session, *, older_than: int) -> int:
    """Delete up to PURGE_BATCH deliveries that ended before ``older_than`` (ms); return how many."""
    ended = (
        select(WebhookDelivery.id)
        .where(WebhookDelivery.status != "pending", WebhookDelivery.updated_at < older_than)
        .limit(PURGE_BATCH)
    )
    return rows_changed(
        session, delete(WebhookDelivery).where(WebhookDelivery.id.in_(ended.scalar_subquery()))
    )


def retry(session: Session, *, account_id: str, webhook_id: str, delivery_id: str) -> WebhookDelivery:
    """Send the delivery again now, once (a pending one is moved up). Its endpoint must be
    enabled (WebhookDisabled otherwise)."""
    webhook = endpoints.get(session, account_id=account_id, webhook_id=webhook_id)
    delivery = get_owned(session, WebhookDelivery, row_id=delivery_id, account_id=account_id, for_update=True)
    if delivery.webhook_id != webhook.id:
        raise NotFound("Delivery not found.")
    if not webhook.enabled:
        raise WebhookDisabled(
            "The webhook is disabled: enable it (updateWebhook) before retrying its deliveries.",
            details={"reason": webhook.disabled_reason},
        )
    now = now_ms()
    if delivery.status != "pending":
        delivery.manual = True
    delivery.status, delivery.next_attempt_at, delivery.updated_at = "pending", now, now
    return delivery


@dataclasses.dataclass(frozen=True)
class DeliveryPage:
    deliveries: list[WebhookDelivery]
    next_cursor: str | None


def list_deliveries(
    session: Session, *, account_id: str, webhook_id: str, secret: str, limit: int, cursor: str | None
) -> DeliveryPage:
    """The endpoint's deliveries, newest first, a page at a time."""
    webhook = endpoints.get(session, account_id=account_id, webhook_id=webhook_id)
    query = select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook.id)
    scope = f"deliveries:{webhook.id}"
    if cursor is not None:
        created, last_id = decode_cursor(secret, cursor, scope=scope, size=2)
        query = query.where(
            (WebhookDelivery.created_at < created)
            | ((WebhookDelivery.created_at == created) & (WebhookDelivery.id < last_id))
        )
    found = list(
        session.scalars(
            query.order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc()).limit(limit + 1)
        )
    )
    page, next_cursor = found[:limit], None
    if len(found) > limit:
        next_cursor = encode_cursor(secret, scope=scope, position=[page[-1].created_at, page[-1].id])
    return DeliveryPage(page, next_cursor)
