"""Webhook events, made from the changes feed (its one source of truth): each enabled endpoint
keeps the account's change sequence it has been told up to (``position``), and dispatching
turns the changes after it into deliveries, in the transaction that moves the position, so
each change becomes its deliveries once per endpoint.

What a change tells an endpoint, given where the endpoint was (the feed keeps a resource's
latest change, so changes made before a dispatch are told together):
- a card or folder created since: ``card.created`` / ``folder.created``; otherwise changed:
  ``card.updated`` / ``folder.updated``; deleted: ``card.deleted`` / ``folder.deleted``;
- an annotation, a share or a feed subscription likewise: ``annotation.created``,
  ``share.updated``, ``subscription.deleted`` and so on (only to an endpoint that names them:
  cardvault.domain.webhooks.endpoints.NAMED_ONLY); a subscription's poll is told only when it
  changed its ``lastError`` or ``entriesSaved`` (cardvault.domain.changes' quiet columns);
- a card whose processing settled since: also ``card.processed``;
- a tag: ``tag.updated`` while a card carries it, else ``tag.deleted``;
- a tag operation or export: ``tag_operation.completed``/``failed`` and ``export.ready``/
  ``failed``, once, from the change that marked its end (its progress is told by the feed
  alone). Each event is decided by the change's marks, not by what the resource is when the
  dispatcher reads it: a change made while it ran is not told as its end.

A burst is told as one ``changes.coalesced`` delivery per endpoint instead of one per event:
when one dispatch tells an endpoint more than COALESCE_AT events, or its deliveries waiting
would pass BACKLOG. Its data counts the events by type between two sequences; the receiver
reads the feed for them. Until its first attempt it takes in what the next dispatches tell the
endpoint, so a rename over a million cards, or an endpoint down for a day, is a few rows, not
one per change (its body is fixed once an attempt has sent it)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cardvault.domain import feed
from cardvault.domain.clock import now_ms
from cardvault.domain.ids import new_id
from cardvault.domain.models import Change, ChangeCounter, Webhook, WebhookDelivery
from cardvault.domain.webhooks.endpoints import subscribed

DISPATCH_BATCH = 500
COALESCED = "changes.coalesced"
COALESCE_AT = 10  # events one dispatch tells an endpoint one by one, at most
BACKLOG = 100  # an endpoint's deliveries waiting, past which what it is told is coalesced
# The kinds told as created, updated or deleted (their data the id and sequence alone).
_TOLD_AS_MADE = frozenset({"card", "folder", "annotation", "share", "subscription"})
_ENDED = {
    "tagOperation": {"completed": "tag_operation.completed", "failed": "tag_operation.failed"},
    "export": {"ready": "export.ready", "failed": "export.failed"},
}


def iso_time(ms: int) -> str:
    """A time as Standard Webhooks' payloads write it: ISO 8601 in UTC, to the millisecond."""
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def body(event: str, timestamp: int, data: dict[str, Any]) -> str:
    """The JSON every attempt of a delivery sends: ``{type, timestamp, data}``."""
    payload = {"type": event, "timestamp": iso_time(timestamp), "data": data}
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def events_of(change: Change, position: int, found: feed.Resources) -> list[tuple[str, dict[str, Any]]]:
    """The events one change tells an endpoint told up to ``position``, with their data."""
    data: dict[str, Any] = {"id": change.resource_id, "sequence": change.sequence}
    kind = change.kind
    if kind in _TOLD_AS_MADE:
        if change.action == "delete":
            return [(f"{kind}.deleted", data)]
        told = [(f"{kind}.created" if change.created_sequence > position else f"{kind}.updated", data)]
        if kind == "card" and change.processed_sequence > position:
            told.append(("card.processed", data))
        return told
    if kind == "tag":
        tag = found.tags.get(change.resource_id)
        if tag is None:
            return [("tag.deleted", data)]
        return [("tag.updated", {**data, "name": tag.name, "count": tag.count})]
    if change.processed_sequence <= position:  # an operation or export told only as it ends
        return []
    status = None
    if kind == "tagOperation" and (operation := found.tag_operations.get(change.resource_id)) is not None:
        status = operation.status
    elif kind == "export" and (job := found.exports.get(change.resource_id)) is not None:
        status = job.status
    event = _ENDED.get(kind, {}).get(status or "")
    return [] if event is None else [(event, data)]


def dispatch(session: Session, *, account_id: str) -> tuple[list[WebhookDelivery], bool]:
    """Turn the account's next changes into deliveries for each enabled endpoint and move the
    endpoints' positions past them; answer the new deliveries and whether more changes wait.
    The endpoints are locked, so two dispatchers of one account take turns."""
    hooks: Sequence[Webhook] = session.scalars(
        select(Webhook)
        .where(Webhook.account_id == account_id, Webhook.enabled.is_(True))
        .order_by(Webhook.id)
        .with_for_update()
    ).all()
    if not hooks:
        return [], False
    start = min(hook.position for hook in hooks)
    found: Sequence[Change] = session.scalars(
        select(Change)
        .where(Change.account_id == account_id, Change.sequence > start)
        .order_by(Change.sequence)
        .limit(DISPATCH_BATCH)
    ).all()
    if not found:
        return [], False
    resources = feed.resources(
        session, account_id=account_id, changes=[c for c in found if c.kind not in _TOLD_AS_MADE]
    )
    waiting, open_ = _backlog(session, hooks)
    now, made = now_ms(), []
    for hook in hooks:
        told = [
            (event, data, change)
            for change in found
            if change.sequence > hook.position
            for event, data in events_of(change, hook.position, resources)
            if subscribed(hook, event)
        ]
        if not told:
            pass
        elif hook.id in open_ or len(told) > COALESCE_AT or waiting.get(hook.id, 0) + len(told) > BACKLOG:
            made.append(_coalesced(hook, open_.get(hook.id), told, now))
        else:
            made.extend(
                _delivery(hook, event, change.sequence, body(event, change.changed_at, data), now)
                for event, data, change in told
            )
        hook.position = max(hook.position, found[-1].sequence)
    session.add_all(made)
    return made, len(found) == DISPATCH_BATCH


def _backlog(session: Session, hooks: Sequence[Webhook]) -> tuple[dict[str, int], dict[str, WebhookDelivery]]:
    """Each endpoint's count of deliveries waiting, and its coalesced delivery not yet tried
    (locked: it takes in this dispatch's events), if any."""
    ids = [hook.id for hook in hooks]
    pending = WebhookDelivery.status == "pending"
    counts = session.execute(
        select(WebhookDelivery.webhook_id, func.count())
        .where(WebhookDelivery.webhook_id.in_(ids), pending)
        .group_by(WebhookDelivery.webhook_id)
    ).all()
    opened = session.scalars(
        select(WebhookDelivery)
        .where(
            WebhookDelivery.webhook_id.in_(ids),
            pending,
            WebhookDelivery.event == COALESCED,
            WebhookDelivery.attempts == 0,
            WebhookDelivery.lease.is_(None),
        )
        .order_by(WebhookDelivery.id)
        .with_for_update()
    ).all()
    return {webhook_id: int(count) for webhook_id, count in counts}, {d.webhook_id: d for d in opened}


def _coalesced(
    hook: Webhook, opened: WebhookDelivery | None, told: list[tuple[str, dict[str, Any], Change]], now: int
) -> WebhookDelivery:
    """The endpoint's coalesced delivery, made or taking in ``told`` (not empty): ``{fromSequence,
    throughSequence, count, events}`` (the count of each event type)."""
    data: dict[str, Any] = {"fromSequence": None, "throughSequence": None, "count": 0, "events": {}}
    if opened is not None:
        data = json.loads(opened.body)["data"]
    counts: dict[str, int] = data["events"]
    for event, _data, _change in told:
        counts[event] = counts.get(event, 0) + 1
    data["fromSequence"] = data["fromSequence"] or told[0][2].sequence
    data["throughSequence"] = told[-1][2].sequence
    data["count"] += len(told)
    last_at = told[-1][2].changed_at
    sent = body(COALESCED, last_at, {**data, "events": dict(sorted(counts.items()))})
    if opened is None:
        return _delivery(hook, COALESCED, data["throughSequence"], sent, now)
    opened.body, opened.sequence, opened.updated_at = sent, data["throughSequence"], now
    return opened


def behind(session: Session, *, limit: int = 500) -> Sequence[str]:
    """Accounts with an enabled endpoint not yet told of their last change."""
    return session.scalars(
        select(Webhook.account_id)
        .join(ChangeCounter, ChangeCounter.account_id == Webhook.account_id)
        .where(Webhook.enabled.is_(True), Webhook.position < ChangeCounter.last_sequence)
        .distinct()
        .limit(limit)
    ).all()


def ping(session: Session, webhook: Webhook) -> WebhookDelivery:
    """A ``ping`` for the endpoint, sent once whatever events it takes."""
    now = now_ms()
    delivery = _delivery(webhook, "ping", None, body("ping", now, {"webhookId": webhook.id}), now)
    delivery.manual = True
    session.add(delivery)
    return delivery


def _delivery(hook: Webhook, event: str, sequence: int | None, sent: str, now: int) -> WebhookDelivery:
    return WebhookDelivery(
        id=new_id("msg"),
        webhook_id=hook.id,
        account_id=hook.account_id,
        event=event,
        sequence=sequence,
        body=sent,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        manual=False,
        log=[],
        created_at=now,
        updated_at=now,
    )
