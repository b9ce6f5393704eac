"""Actors that turn an account's changes into webhook deliveries and send them.

``dispatch_webhooks`` is sent after each commit that recorded changes of an account with an
enabled endpoint (cardvault.domain.changes announces it to the listener cardvault.bootstrap
connects); ``deliver_webhooks`` sends an
endpoint's due deliveries in batches and sends itself again, delayed, for the next attempt due.
A batch is taken only on its account's turn (CARDVAULT_WEBHOOK_ACCOUNT_SENDS endpoints at once),
and one that ends sends the account's endpoints left waiting.
The sweeper covers what a lost message or a dead worker left: endpoints behind their account's
changes, and deliveries due."""

from __future__ import annotations

import email.utils
import logging
import time

from cardvault.adapters.fetcher import FetchRefused
from cardvault.domain.clock import now_ms
from cardvault.domain.webhooks import deliveries, events
from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.workers.broker import actor

log = logging.getLogger("cardvault.webhooks")
MAX_RETRY_AFTER_MS = 86_400_000


BATCH = 50  # deliveries an attempt takes of one endpoint


@actor(actor_name="dispatch_webhooks", queue_name="webhooks", max_retries=10, time_limit=300_000)
def dispatch_webhooks(services: Services, account_id: str) -> None:
    """Make the deliveries of the account's changes not yet dispatched, and send them once all
    are made (a burst's coalesced delivery takes in every batch before it is sent)."""
    endpoints: set[str] = set()
    more = True
    while more:
        with services.database.transaction() as session:
            made, more = events.dispatch(session, account_id=account_id)
            endpoints.update(delivery.webhook_id for delivery in made)
    for webhook_id in sorted(endpoints):
        deliver_webhooks.send(webhook_id)


def lease_ms(config: Settings) -> int:
    """How long a batch is held: past its sending (posts start while the lease has a post's
    time and a margin left, and each ends by its deadline), so it never expires under an
    attempt (docs/configuration.md: CARDVAULT_STALE_SECONDS)."""
    return int(max(config.stale_seconds, 2 * config.webhook_timeout_seconds + 5) * 1000)


@actor(actor_name="deliver_webhooks", queue_name="webhooks", max_retries=10, time_limit=180_000)
def deliver_webhooks(services: Services, webhook_id: str) -> None:
    """Send the endpoint's due deliveries, a batch over one connection, record what each met,
    and send this again for the rest, for the next attempt due and for the account's endpoints
    that waited for their turn."""
    config = services.settings
    held_ms = lease_ms(config)
    with services.database.transaction() as session:
        batch = deliveries.take(
            session,
            webhook_id=webhook_id,
            lease_ms=held_ms,
            limit=BATCH,
            account_sends=config.webhook_account_sends,
        )
    if batch is None:
        return
    sent: Sent = []
    began = time.monotonic()
    try:
        unsent = send(services, batch, sent, seconds=held_ms / 1000 - config.webhook_timeout_seconds - 5)
    except BaseException as exc:
        # Cut short (the actor's time limit, a shutdown, a fault of ours): the attempt under
        # way is a failure, counted like any other, and the rest go back unsent.
        took = int((time.monotonic() - began) * 1000)
        _settle(services, webhook_id, *_interrupted(batch, sent, exc, took))
        raise
    next_at = _settle(services, webhook_id, sent, unsent)
    with services.database.transaction(write=False) as session:
        waiting = deliveries.handed_on(session, webhook_id=webhook_id)
    for waiting_id in waiting:
        deliver_webhooks.send(waiting_id)
    if next_at is not None:
        deliver_webhooks.send_with_options(args=(webhook_id,), delay=max(0, next_at - now_ms()))


Sent = list[tuple[deliveries.Attempt, deliveries.Outcome]]


def _settle(services: Services, webhook_id: str, sent: Sent, unsent: list[deliveries.Attempt]) -> int | None:
    schedule = services.settings.webhook_schedule
    with services.database.transaction() as session:
        return deliveries.settle(session, webhook_id, sent, unsent=unsent, schedule=schedule)


def _interrupted(
    batch: deliveries.Batch, sent: Sent, exc: BaseException, took_ms: int
) -> tuple[Sent, list[deliveries.Attempt]]:
    """What a batch cut short met: its attempt under way failed, those after it unsent."""
    done = len(sent)
    if done == len(batch.attempts):
        return sent, []
    before = sum(outcome.duration_ms for _, outcome in sent)
    error = f"FETCH_FAILED: the attempt was cut short ({type(exc).__name__})"
    failed = deliveries.Outcome(status=None, error=error, duration_ms=max(0, took_ms - before))
    return [*sent, (batch.attempts[done], failed)], batch.attempts[done + 1 :]


def send(
    services: Services, batch: deliveries.Batch, results: Sent, *, seconds: float
) -> list[deliveries.Attempt]:
    """POST the batch's attempts one after another through the SSRF-safe fetcher, over one
    connection to the vetted address, adding what each sent one met to ``results`` as it is
    met; answer those left unsent (the time was up, or the endpoint said 410 or to slow down).
    An endpoint that cannot be reached (refused, timed out) fails every attempt left with the
    same error: it would not answer them either."""
    started, attempts = time.monotonic(), batch.attempts
    try:
        with services.webhook_fetcher.poster(batch.url) as post:
            for index, attempt in enumerate(attempts):
                if results and time.monotonic() - started > seconds:
                    return attempts[index:]
                began = time.monotonic()
                try:
                    answer = post(attempt.body.encode(), attempt.headers)
                except FetchRefused as refused:
                    failed = _failed(refused, began)
                    results.extend((left, failed) for left in attempts[index:])
                    return []
                outcome = deliveries.Outcome(
                    status=answer.status,
                    error=None,
                    duration_ms=int((time.monotonic() - began) * 1000),
                    retry_after_ms=retry_after(answer.headers.get("retry-after")),
                )
                results.append((attempt, outcome))
                if answer.status == 410 or answer.status in deliveries.SLOWING or outcome.retry_after_ms:
                    return attempts[index + 1 :]
    except FetchRefused as refused:  # the URL itself: not public, no such name
        failed = _failed(refused, started)
        results.extend((attempt, failed) for attempt in attempts)
    return []


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


def resend_due(services: Services) -> int:
    """Send the delivery of every endpoint with an attempt due and not held, and the dispatch of
    every account whose endpoints are behind its changes; return how many messages."""
    with services.database.transaction(write=False) as session:
        due = deliveries.due(session)
        behind = events.behind(session)
    for webhook_id in due:
        deliver_webhooks.send(webhook_id)
    for account_id in behind:
        dispatch_webhooks.send(account_id)
    return len(due) + len(behind)
