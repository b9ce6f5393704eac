"""Webhook deliveries (cardvault.domain.webhooks.deliveries): signatures the reference verifier
accepts, one attempt at a time under a lease, the retry schedule with its jitter, 410, the last
retry, Retry-After, and retries asked for."""

from __future__ import annotations

import random

import pytest
from standardwebhooks import Webhook as Verifier

from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import WebhookDisabled
from cardvault.domain.models import Webhook, WebhookDelivery
from cardvault.domain.webhooks import deliveries, endpoints, events
from cardvault.domain.webhooks.deliveries import Outcome

SCHEDULE = (0.0, 5.0, 300.0)
FAILED = Outcome(status=500, error=None, duration_ms=3)


def _made(database: Database, account_id: str) -> tuple[str, str]:
    """A webhook and a ping for it: their ids."""
    with database.transaction() as session:
        webhook, _ = endpoints.create(
            session, account_id=account_id, url="https://hooks.example/", events=["*"], description=""
        )
        delivery = events.ping(session, webhook)
        delivery.manual = False  # on the schedule, like an event's
        session.flush()
        return webhook.id, delivery.id


def _take(database: Database, webhook_id: str, limit: int = 50) -> deliveries.Batch | None:
    with database.transaction() as session:
        return deliveries.take(session, webhook_id=webhook_id, lease_ms=60_000, limit=limit)


def _attempt(database: Database, webhook_id: str, outcome: Outcome) -> int | None:
    batch = _take(database, webhook_id)
    assert batch is not None
    (attempt,) = batch.attempts
    with database.transaction() as session:
        return deliveries.settle(
            session, webhook_id, [(attempt, outcome)], schedule=SCHEDULE, rng=random.Random(7)
        )


def _due_now(database: Database, delivery_id: str) -> None:
    with database.transaction() as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        assert delivery is not None
        delivery.next_attempt_at = now_ms()


def test_the_signature_is_the_one_standard_webhooks_verifies(database: Database, account_id: str) -> None:
    webhook_id, delivery_id = _made(database, account_id)
    batch = _take(database, webhook_id)
    with database.transaction() as session:
        webhook = session.get(Webhook, webhook_id)
        assert batch is not None and webhook is not None
        secret = webhook.secret
    (attempt,) = batch.attempts
    payload = Verifier(secret).verify(attempt.body, attempt.headers)
    assert payload["type"] == "ping" and attempt.headers["webhook-id"] == delivery_id


def test_an_attempt_is_taken_once_until_its_lease_ends(database: Database, account_id: str) -> None:
    webhook_id, delivery_id = _made(database, account_id)
    assert _take(database, webhook_id) is not None
    assert _take(database, webhook_id) is None  # held
    with database.transaction() as session:
        assert webhook_id not in deliveries.due(session)
        held = session.get(WebhookDelivery, delivery_id)
        assert held is not None
        held.lease_until = now_ms() - 1  # its worker died: its endpoint's turn ended too
        endpoint = session.get(Webhook, webhook_id)
        assert endpoint is not None and endpoint.sending_until is not None
        endpoint.sending_until = held.lease_until
    with database.transaction() as session:
        assert webhook_id in deliveries.due(session)
    assert _take(database, webhook_id) is not None


def test_a_batch_takes_the_oldest_due_and_gives_back_what_it_did_not_send(
    database: Database, account_id: str
) -> None:
    webhook_id, first = _made(database, account_id)
    with database.transaction() as session:
        webhook = session.get(Webhook, webhook_id)
        assert webhook is not None
        later = [events.ping(session, webhook) for _ in range(2)]
        for delivery in later:
            delivery.manual = False
        oldest = session.get(WebhookDelivery, first)
        assert oldest is not None
        oldest.next_attempt_at = now_ms() - 1_000  # due before the later two, even in the same millisecond
        session.flush()
    batch = _take(database, webhook_id, limit=2)
    assert batch is not None and batch.full and len(batch.attempts) == 2
    sent, unsent = batch.attempts
    assert sent.delivery_id == first
    with database.transaction() as session:
        deliveries.settle(
            session, webhook_id, [(sent, Outcome(200, None, 1))], schedule=SCHEDULE, unsent=[unsent]
        )
    rest = _take(database, webhook_id)
    assert rest is not None and not rest.full
    assert {a.delivery_id for a in rest.attempts} == {d.id for d in later}


def test_failures_follow_the_schedule_with_jitter_then_disable_the_endpoint(
    database: Database, account_id: str
) -> None:
    webhook_id, delivery_id = _made(database, account_id)
    before = now_ms()
    next_at = _attempt(database, webhook_id, FAILED)
    assert next_at is not None and before + 4_500 <= next_at <= now_ms() + 5_500
    _due_now(database, delivery_id)
    next_at = _attempt(database, webhook_id, FAILED)
    assert next_at is not None and before + 270_000 <= next_at <= now_ms() + 330_000
    _due_now(database, delivery_id)
    assert _attempt(database, webhook_id, FAILED) is None  # the third and last
    with database.transaction(write=False) as session:
        delivery, webhook = session.get(WebhookDelivery, delivery_id), session.get(Webhook, webhook_id)
        assert delivery is not None and webhook is not None
        assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 3, None)
        assert [entry["responseStatus"] for entry in delivery.log] == [500, 500, 500]
        assert (webhook.enabled, webhook.disabled_reason) == (False, "FAILING")


@pytest.mark.parametrize(("status", "reason"), [(410, "GONE"), (200, None), (204, None)])
def test_2xx_succeeds_and_410_disables_at_once(
    database: Database, account_id: str, status: int, reason: str | None
) -> None:
    webhook_id, delivery_id = _made(database, account_id)
    assert _attempt(database, webhook_id, Outcome(status=status, error=None, duration_ms=1)) is None
    with database.transaction(write=False) as session:
        delivery, webhook = session.get(WebhookDelivery, delivery_id), session.get(Webhook, webhook_id)
        assert delivery is not None and webhook is not None
        assert delivery.status == ("failed" if reason else "succeeded")
        assert webhook.disabled_reason == reason and webhook.enabled is (reason is None)


@pytest.mark.parametrize(("status", "retry_after", "at_least"), [(429, None, 5_000), (503, 600_000, 600_000)])
def test_slowing_answers_pause_the_endpoint(
    database: Database, account_id: str, status: int, retry_after: int | None, at_least: int
) -> None:
    webhook_id, _ = _made(database, account_id)
    before = now_ms()
    outcome = Outcome(status=status, error=None, duration_ms=1, retry_after_ms=retry_after)
    next_at = _attempt(database, webhook_id, outcome)
    with database.transaction() as session:
        webhook = session.get(Webhook, webhook_id)
        assert webhook is not None and webhook.paused_until is not None
        assert webhook.paused_until >= before + at_least * 0.9 and next_at is not None
        other = events.ping(session, webhook)
        other.manual = False
        session.flush()
        other_id = other.id
    assert _take(database, webhook_id) is None  # the endpoint's other deliveries wait too
    with database.transaction() as session:
        waiting = session.get(WebhookDelivery, other_id)
        assert waiting is not None and waiting.next_attempt_at == webhook.paused_until


def test_a_retry_asked_for_is_one_attempt_and_needs_an_enabled_endpoint(
    database: Database, account_id: str
) -> None:
    webhook_id, delivery_id = _made(database, account_id)
    _attempt(database, webhook_id, Outcome(status=200, error=None, duration_ms=1))
    with database.transaction() as session:
        retried = deliveries.retry(
            session, account_id=account_id, webhook_id=webhook_id, delivery_id=delivery_id
        )
        assert (retried.status, retried.manual) == ("pending", True)
    assert _attempt(database, webhook_id, FAILED) is None  # failed once: no schedule, still enabled
    with database.transaction() as session:
        webhook = session.get(Webhook, webhook_id)
        assert webhook is not None and webhook.enabled
        endpoints.set_enabled(session, webhook, False, reason="USER")
    with database.transaction() as session, pytest.raises(WebhookDisabled):
        deliveries.retry(session, account_id=account_id, webhook_id=webhook_id, delivery_id=delivery_id)
