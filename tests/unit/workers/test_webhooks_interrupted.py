"""A batch of deliveries cut short mid-post by Dramatiq's own time limit (issue 42 #2): the
embedded worker runs ``deliver_webhooks`` with a message time limit of a few seconds while a
loopback endpoint trickles ``100 Continue`` for far longer, so TimeLimitExceeded is raised in
the worker thread inside the post. While the attempt runs its deliveries are leased (the
sweeper's ``resend_due`` and another message send nothing more); once cut short, the attempt
under way is settled like any failure (counted, logged, the socket closed) and the rest of the
batch is given back unsent, due again, the endpoint's turn freed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.domain.models import Webhook, WebhookDelivery
from cardvault.domain.webhooks import deliveries, endpoints, events
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers import broker, embedded, webhooks
from harness.servers import TrickleServer, trickle_server
from tests.conftest import Api, api_of_new_account, app_env

TIME_LIMIT_MS = 5_000  # the message's; the endpoint's own deadline (20 s) is far later


@pytest.fixture
def staller() -> Iterator[TrickleServer]:
    # 100 Continue every 0.2 s for 30 s: each read is quick, the post never ends in time.
    with trickle_server("continue", every=0.2, times=150) as server:
        yield server


@pytest.fixture
def api(tmp_path: Path, database: Database, staller: TrickleServer) -> Iterator[Api]:
    settings = Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(staller.port),
            "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS": "20",
            "CARDVAULT_SWEEP_SECONDS": "3600",  # the sweeper's one pass is at boot: this test sweeps
        }
    )
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        embedded.wait_until_idle()
        yield api_of_new_account(client, database, "interrupted")
    broker.broker.flush_all()


def _rows(database: Database, webhook_id: str) -> list[WebhookDelivery]:
    with database.transaction(write=False) as session:
        rows = list(
            session.scalars(
                select(WebhookDelivery)
                .where(WebhookDelivery.webhook_id == webhook_id)
                .order_by(WebhookDelivery.id)
            )
        )
        session.expunge_all()
        return rows


def test_a_batch_cut_short_mid_post_is_settled_and_its_rest_given_back(
    api: Api, database: Database, staller: TrickleServer
) -> None:
    made = api.post("/v1/webhooks", json={"url": staller.url(), "events": ["card.created"]})
    assert made.status_code == 201, made.text
    webhook_id = made.json()["webhook"]["id"]
    with database.transaction() as session:  # three pings due at once: one batch
        hook = endpoints.get(session, account_id=api.account_id, webhook_id=webhook_id)
        for _ in range(3):
            events.ping(session, hook)
    webhooks.deliver_webhooks.send_with_options(args=(webhook_id,), time_limit=TIME_LIMIT_MS, max_retries=0)
    deadline = time.monotonic() + 30
    while not staller.requests:
        assert time.monotonic() < deadline, "the batch was never sent"
        time.sleep(0.02)
    # Mid-post: every delivery of the batch is leased, so none is due to the sweeper, and
    # another message for the endpoint finds its turn taken.
    leased = _rows(database, webhook_id)
    assert all(row.lease is not None and row.attempts == 0 for row in leased)
    with database.transaction(write=False) as session:
        assert webhook_id not in deliveries.due(session)
    assert webhooks.resend_due(broker.services_of(broker.broker)) == 0
    webhooks.deliver_webhooks.send(webhook_id)
    while not any(row.attempts for row in _rows(database, webhook_id)):
        assert time.monotonic() < deadline, "the attempt cut short was never settled"
        time.sleep(0.05)
    first, *rest = sorted(_rows(database, webhook_id), key=lambda row: -row.attempts)
    # The attempt under way: failed (a ping makes one attempt), counted and logged.
    assert (first.status, first.attempts, first.lease) == ("failed", 1, None)
    (entry,) = first.log
    assert entry["responseStatus"] is None and "TimeLimitExceeded" in entry["error"], entry
    # The rest: given back unsent, due again, and the endpoint's turn freed.
    assert [(row.status, row.attempts, row.lease, row.log) for row in rest] == [("pending", 0, None, [])] * 2
    with database.transaction(write=False) as session:
        assert webhook_id in deliveries.due(session)
        hook_row = session.get(Webhook, webhook_id)
        assert hook_row is not None and hook_row.sending_lease is None
    while staller.open:  # the cut-short post's connection is closed, not left to the server
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert (len(staller.requests), staller.most_at_once, staller.hung_up) == (1, 1, 1)
