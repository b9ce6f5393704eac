"""Webhooks survive their worker being killed mid-delivery, in production's shape (PostgreSQL,
Redis, an API process and `cardvault worker` processes): after kill -9 the next worker sends
what was left, every card's event arrives, and the only deliveries that arrive twice are those
the killed worker had on the wire, with the same webhook-id (at least once, as documented).

An endpoint takes one batch at a time (its account's turn is held by the batch's lease), so
what waits behind the hanging delivery is sent only once the killed worker's lease has ended.
Each card is made once the one before has its delivery: a dispatch telling more than
events.COALESCE_AT events at once would coalesce them into one delivery with no card's id."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook as Verifier

from harness.servers import Answer, PageServer, page_server, prepared, redis_server, server_env, serving
from tests.conftest import fresh_postgres_database
from tests.contract.production import kill
from tests.contract.production import worker as start_worker

CARDS = 20
WAIT = 120  # seconds a step may take on a loaded machine before the test gives up


@pytest.fixture
def production(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, str, PageServer]]:
    url = fresh_postgres_database("cardvault_webhook_crash", "the webhook crash test")
    with page_server() as receiver, redis_server(tmp_path) as (redis_url, _):
        env = {
            **server_env(tmp_path, url),
            "CARDVAULT_REDIS_URL": redis_url,
            "CARDVAULT_STALE_SECONDS": "4",  # a killed worker's stages are taken over soon
            "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS": "5",  # the hanging post outlasts the kill
            "CARDVAULT_SWEEP_SECONDS": "0.5",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(receiver.port),
            "CARDVAULT_WEBHOOK_SCHEDULE": "0,0.2,0.2,0.2,0.2,0.2",
        }
        key = prepared(env)
        with serving(env, tmp_path / "server.log") as base:
            yield env, base, key, receiver


def test_a_worker_killed_mid_delivery_loses_nothing_and_repeats_only_what_was_on_the_wire(
    production: tuple[dict[str, str], str, str, PageServer], tmp_path: Path
) -> None:
    env, base, key, receiver = production
    headers = {"Authorization": f"Bearer {key}"}
    release = threading.Event()
    first_call = threading.Lock()

    def hook() -> Answer:
        if first_call.acquire(blocking=False):  # the first delivery hangs until the kill
            release.wait(30)
        return (200, {}, b"ok")

    receiver.routes["/hook"] = hook
    made = httpx.post(
        f"{base}/webhooks", headers=headers, json={"url": receiver.url("/hook"), "events": ["card.created"]}
    ).json()
    webhook_id, secret = made["webhook"]["id"], made["secret"]
    cards: set[str] = set()
    log = tmp_path / "workers.log"
    worker = start_worker(env, log)
    try:
        cards.add(_card(base, headers, webhook_id, len(cards), log))
        deadline = time.monotonic() + WAIT
        while not receiver.received:  # the hanging one on the wire
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.01)
        while len(cards) < 3:  # and others waiting behind it, for the endpoint's turn
            cards.add(_card(base, headers, webhook_id, len(cards), log))
        kill(worker)
        # What the killed worker had sent may still be reaching the receiver: counted once
        # arrivals have stopped (its sockets are closed; nothing else sends yet).
        arrived, steady_since = len(receiver.received), time.monotonic()
        while time.monotonic() - steady_since < 0.5:
            time.sleep(0.05)
            if len(receiver.received) != arrived:
                arrived, steady_since = len(receiver.received), time.monotonic()
        on_the_wire = {headers["webhook-id"] for _, headers, _ in list(receiver.received)}
    finally:
        release.set()
        kill(worker)
    worker = start_worker(env, log)
    try:
        while len(cards) < CARDS:  # dispatched while the dead worker's lease holds the turn
            cards.add(_card(base, headers, webhook_id, len(cards), log))
        deadline = time.monotonic() + WAIT
        # Every delivery settled: the one the killed worker held is sent again once its lease
        # has ended, with those that waited for the endpoint's turn.
        while _pending(base, headers, webhook_id):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        told = _told(receiver, secret)
    finally:
        kill(worker)
    assert set(told) == cards  # none lost
    ids_per_card = {card: {m for m, _ in arrivals} for card, arrivals in told.items()}
    assert all(len(ids) == 1 for ids in ids_per_card.values())  # one webhook-id per event
    repeated = {m for arrivals in told.values() for m, count in _counts(arrivals).items() if count > 1}
    assert repeated <= on_the_wire and repeated  # the hanging one at least, sent again


def _card(base: str, headers: dict[str, str], webhook_id: str, number: int, log: Path) -> str:
    """Make a card, and wait until the endpoint has its delivery (the card is told alone)."""
    answer = httpx.post(f"{base}/cards", headers=headers, json={"content": f"card {number}"})
    deadline = time.monotonic() + WAIT
    while len(_deliveries(base, headers, webhook_id)) <= number:
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    card_id: str = answer.json()["cardId"]
    return card_id


def _pending(base: str, headers: dict[str, str], webhook_id: str) -> int:
    """How many of the endpoint's deliveries have not ended (all of them until they exist)."""
    items = _deliveries(base, headers, webhook_id)
    if len(items) < CARDS:
        return CARDS
    return sum(delivery["status"] == "pending" for delivery in items)


def _deliveries(base: str, headers: dict[str, str], webhook_id: str) -> list[dict[str, Any]]:
    page = httpx.get(f"{base}/webhooks/{webhook_id}/deliveries", headers=headers, params={"limit": 100})
    items: list[dict[str, Any]] = page.json()["items"]
    return items


def _told(receiver: PageServer, secret: str) -> dict[str, list[tuple[str, int]]]:
    """Each card's arrivals: (webhook-id, index), every body verified."""
    told: dict[str, list[tuple[str, int]]] = {}
    for index, (_, headers, body) in enumerate(list(receiver.received)):
        payload = Verifier(secret).verify(body, headers)
        assert payload == json.loads(body)
        told.setdefault(payload["data"]["id"], []).append((headers["webhook-id"], index))
    return told


def _counts(arrivals: list[tuple[str, int]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for message_id, _ in arrivals:
        counts[message_id] = counts.get(message_id, 0) + 1
    return counts
