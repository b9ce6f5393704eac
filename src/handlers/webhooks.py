"""Webhooks: thin edges over cardvault.domain.webhooks; deliveries are sent by the workers."""

from __future__ import annotations

import functools
import json
from typing import Any

from sqlalchemy.orm import Session

from cardvault.domain import versions
from cardvault.domain.db import after_commit
from cardvault.domain.models import Webhook, WebhookDelivery
from cardvault.domain.webhooks import deliveries, endpoints, events
from cardvault.handlers.http import conditional, runtime
from cardvault.handlers.http.operations import held_credential
from cardvault.handlers.http.paging import page_json
from cardvault.workers.webhooks import deliver_webhooks

# An answer with headers (the ETag), or a 304 without a body.
Answer = tuple[dict[str, Any] | None, int, dict[str, str]]


def webhook_json(webhook: Webhook) -> dict[str, Any]:
    rotating = webhook.previous_secret is not None and webhook.previous_until is not None
    return {
        "id": webhook.id,
        "url": webhook.url,
        "events": webhook.events,
        "description": webhook.description,
        "enabled": webhook.enabled,
        "disabledReason": webhook.disabled_reason,
        "disabledAt": webhook.disabled_at,
        "pausedUntil": webhook.paused_until,
        "previousSecretExpiresAt": webhook.previous_until if rotating else None,
        "createdAt": webhook.created_at,
        "updatedAt": webhook.updated_at,
    }


def delivery_json(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "webhookId": delivery.webhook_id,
        "event": delivery.event,
        "sequence": delivery.sequence,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "nextAttemptAt": delivery.next_attempt_at,
        "payload": json.loads(delivery.body),
        "attemptLog": delivery.log,
        "createdAt": delivery.created_at,
        "updatedAt": delivery.updated_at,
    }


def _checked_url(url: str) -> str:
    settings = runtime.current().settings
    return endpoints.check_url(url, ports=settings.fetch_ports, allow_loopback=settings.fetch_allow_loopback)


def create_webhook(body: dict[str, Any], user: str) -> Answer:
    url, chosen = _checked_url(body["url"]), endpoints.check_events(body["events"])
    with runtime.current().db.transaction() as session:
        webhook, secret = endpoints.create(
            session,
            account_id=user,
            url=url,
            events=chosen,
            description=body.get("description", ""),
            credential_id=held_credential(),
        )
        made = {"webhook": webhook_json(webhook), "secret": secret}
        return conditional.tagged(session, made, webhook, 201, {"Location": f"/v1/webhooks/{webhook.id}"})


def list_webhooks(user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False, snapshot=False) as session:
        return {"items": [webhook_json(w) for w in endpoints.list_all(session, account_id=user)]}


def get_webhook(webhook_id: str, user: str) -> Answer:
    with runtime.current().db.transaction(write=False, snapshot=False) as session:
        webhook = endpoints.get(session, account_id=user, webhook_id=webhook_id)
    tag = versions.etag(webhook.version)
    return conditional.unchanged(tag) or conditional.with_etag(webhook_json(webhook), tag)


def _checked(session: Session, webhook_id: str, user: str) -> None:
    """The request's If-Match checked against the webhook, locked until the write commits."""
    conditional.require(session, Webhook, account_id=user, row_id=webhook_id)


def update_webhook(webhook_id: str, body: dict[str, Any], user: str) -> Answer:
    url = _checked_url(body["url"]) if "url" in body else None
    chosen = endpoints.check_events(body["events"]) if "events" in body else None
    with runtime.current().db.transaction() as session:
        _checked(session, webhook_id, user)
        webhook = endpoints.update(
            session,
            account_id=user,
            webhook_id=webhook_id,
            url=url,
            events=chosen,
            description=body.get("description"),
            enabled=body.get("enabled"),
            credential_id=held_credential(),
        )
        return conditional.tagged(session, webhook_json(webhook), webhook)


def delete_webhook(webhook_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        _checked(session, webhook_id, user)
        endpoints.delete(session, account_id=user, webhook_id=webhook_id)
    return None, 204


def rotate_webhook_secret(webhook_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, webhook_id, user)
        webhook, secret = endpoints.rotate_secret(session, account_id=user, webhook_id=webhook_id)
        return conditional.tagged(session, {"webhook": webhook_json(webhook), "secret": secret}, webhook)


def test_webhook(webhook_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, webhook_id, user)
        webhook = endpoints.get(session, account_id=user, webhook_id=webhook_id)
        delivery = events.ping(session, webhook)
        after_commit(session, functools.partial(deliver_webhooks.send, webhook_id))
        return conditional.tagged(session, delivery_json(delivery), webhook, 202)


def list_webhook_deliveries(
    webhook_id: str, user: str, limit: int = 50, cursor: str | None = None
) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        page = deliveries.list_deliveries(
            session,
            account_id=user,
            webhook_id=webhook_id,
            secret=rt.settings.secret_key,
            limit=limit,
            cursor=cursor,
        )
        return page_json([delivery_json(d) for d in page.deliveries], page.next_cursor, None)


def retry_webhook_delivery(webhook_id: str, delivery_id: str, user: str) -> tuple[dict[str, Any], int]:
    with runtime.current().db.transaction() as session:
        delivery = deliveries.retry(session, account_id=user, webhook_id=webhook_id, delivery_id=delivery_id)
        after_commit(session, functools.partial(deliver_webhooks.send, webhook_id))
        return delivery_json(delivery), 202
