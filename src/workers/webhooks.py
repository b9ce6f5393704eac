"""Actors that turn an account's changes into webhook deliveries and send them.

``dispatch_webhooks`` is sent after each commit that recorded changes of an account with an
enabled endpoint (cardvault.domain.changes announces it); ``deliver_webhooks`` sends an
endpoint's due deliveries in batches and sends itself again, delayed, for the next attempt due.
The sweeper covers what a lost message or a dead worker left: endpoints behind their account's
changes, and deliveries due."""

from __future__ import annotations

import email.utils
import logging
import time

import dramatiq

from cardvault.adapters.fetcher import FetchRefused
from cardvault.domain import changes
from cardvault.domain.clock import now_ms
from cardvault.domain.webhooks import deliveries, events
from cardvault.workers.broker import database, settings, webhook_fetcher

log = logging.getLogger("cardvault.webhooks")
MAX_RETRY_AFTER_MS = 86_400_000


BATCH = 50  # deliveries an attempt takes of one endpoint


@dramatiq.actor(actor_name="dispatch_webhooks", queue_name="webhooks", max_retries=10, time_limit=300_000)
def dispatch_webhooks(account_id: str) -> None:
    """Make the deliveries of the account's changes not yet dispatched, and send them."""
    while True:
        with database().transaction() as session:
            made, more = events.dispatch(session, account_id=account_id)
            endpoints = sorted({delivery.webhook_id for delivery in made})
        for webhook_id in endpoints:
            deliver_webhooks.send(webhook_id)
        if not more:
            return


changes.on_announce(dispatch_webhooks.send)


@dramatiq.actor(actor_name="deliver_webhooks", queue_name="webhooks", max_retries=10, time_limit=180_000)
def deliver_webhooks(webhook_id: str) -> None:
    """Send the endpoint's due deliveries, a batch over one connection, record what each met,
    and send this again for the rest and for the next attempt due."""
    config = settings()
    lease_ms = int(config.stale_seconds * 1000)
    with database().transaction() as session:
        batch = deliveries.take(session, webhook_id=webhook_id, lease_ms=lease_ms, limit=BATCH)
    if batch is None:
        return
    # No post starts unless it ends, answered or timed out, within the lease: another worker
    # takes a delivery over only once its lease is over (README: keep the stale time above the
    # webhook timeout).
    sent, unsent = send(batch, seconds=lease_ms / 1000 - config.webhook_timeout_seconds - 1)
    with database().transaction() as session:
        next_at = deliveries.settle(
            session, webhook_id, sent, unsent=unsent, schedule=config.webhook_schedule
        )
    if batch.full or unsent:
        deliver_webhooks.send(webhook_id)
    if next_at is not None:
        deliver_webhooks.send_with_options(args=(webhook_id,), delay=max(0, next_at - now_ms()))


Sent = list[tuple[deliveries.Attempt, deliveries.Outcome]]


def send(batch: deliveries.Batch, *, seconds: float) -> tuple[Sent, list[deliveries.Attempt]]:
    """POST the batch's attempts one after another through the SSRF-safe fetcher, over one
    connection to the vetted address; answer what each sent one met and those left unsent
    (the time was up, or the endpoint said 410 or to slow down). An endpoint that cannot be
    reached (refused, timed out) fails every attempt left with the same error: it would not
    answer them either."""
    started, attempts = time.monotonic(), batch.attempts
    results: Sent = []
    try:
        with webhook_fetcher().poster(batch.url) as post:
            for index, attempt in enumerate(attempts):
                if results and time.monotonic() - started > seconds:
                    return results, attempts[index:]
                began = time.monotonic()
                try:
                    answer = post(attempt.body.encode(), attempt.headers)
                except FetchRefused as refused:
                    failed = _failed(refused, began)
                    return results + [(left, failed) for left in attempts[index:]], []
                outcome = deliveries.Outcome(
                    status=answer.status,
                    error=None,
                    duration_ms=int((time.monotonic() - began) * 1000),
                    retry_after_ms=retry_after(answer.headers.get("retry-after")),
                )
                results.append((attempt, outcome))
                if answer.status == 410 or answer.status in deliveries.SLOWING or outcome.retry_after_ms:
                    return results, attempts[index + 1 :]
    except FetchRefused as refused:  # the URL itself: not public, no such name
        failed = _failed(refused, started)
        return [(attempt, failed) for attempt in attempts], []
    return results, []


def _failed(refused: FetchRefused, began: float) -> deliveries.Outcome:
    took = int((time.monotonic() - began) * 1000)
    return deliveries.Outcome(status=None, error=f"{refused.code}: {refused}"[:300], duration_ms=took)


def retry_after(value: str | None) -> int | None:
    """``Retry-After`` in milliseconds from now (whole seconds or an HTTP date), at most a day."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return min(MAX_RETRY_AFTER_MS, int(value[:9]) * 1000)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, min(MAX_RETRY_AFTER_MS, int(when.timestamp() * 1000) - now_ms()))


def resend_due() -> int:
    """Send the delivery of every endpoint with an attempt due and not held, and the dispatch of
    every account whose endpoints are behind its changes; return how many messages."""
    with database().transaction(write=False) as session:
        due = deliveries.due(session)
        behind = events.behind(session)
    for webhook_id in due:
        deliver_webhooks.send(webhook_id)
    for account_id in behind:
        dispatch_webhooks.send(account_id)
    return len(due) + len(behind)
