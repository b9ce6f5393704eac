"""createWebhook from many threads at once (issue 42 #7): the account's endpoint limit holds
under a race, because making one locks the account's counter row before counting its
endpoints (cardvault.domain.webhooks.endpoints.create). PostgreSQL only: SQLite takes one
writer at a time, so no two makers ever count together there."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from cardvault.domain.db import Database
from cardvault.domain.models import Webhook
from cardvault.domain.webhooks.endpoints import MAX_WEBHOOKS
from tests.conftest import Api

THREADS = 20
HELD = MAX_WEBHOOKS - 4  # the limit nearly reached: four more may be made
BODY = {"url": "https://hooks.example.com/race", "events": ["card.created"]}


def _held(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        query = select(func.count()).select_from(Webhook).where(Webhook.account_id == account_id)
        return int(session.scalar(query) or 0)


@pytest.mark.postgres
def test_twenty_at_once_near_the_limit_make_exactly_the_limit(api: Api, database: Database) -> None:
    if database.dialect != "postgresql":
        pytest.skip("a race of makers needs concurrent writers: PostgreSQL's")
    for _ in range(HELD):
        assert api.post("/v1/webhooks", json=BODY).status_code == 201
    start = threading.Barrier(THREADS)
    answers: list[tuple[int, dict[str, object]]] = []

    def make() -> None:
        start.wait()
        response = api.post("/v1/webhooks", json=BODY)
        answers.append((response.status_code, response.json()))

    threads = [threading.Thread(target=make) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(status for status, _ in answers)
    print(f"{THREADS} makers at {HELD} held: {statuses.count(201)} made, {statuses.count(409)} refused")
    assert _held(database, api.account_id) == MAX_WEBHOOKS
    assert statuses == [201] * (MAX_WEBHOOKS - HELD) + [409] * (THREADS - MAX_WEBHOOKS + HELD)
    for status, body in answers:
        if status == 409:
            assert (body["code"], body["details"]) == ("WEBHOOK_LIMIT_REACHED", {"limit": MAX_WEBHOOKS})
    assert len(api.get("/v1/webhooks").json()["items"]) == MAX_WEBHOOKS
