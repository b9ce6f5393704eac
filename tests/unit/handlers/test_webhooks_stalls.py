"""Webhook endpoints that never finish answering, against the embedded worker (two threads)
and real loopback servers: each attempt fails at the deadline and is counted, the endpoint is
disabled by the usual rules, no delivery is sent twice at once, and one account's stalling
endpoints hold one worker thread, so another account's webhook is delivered meanwhile."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import PageServer, TrickleServer, page_server, trickle_server
from tests.conftest import Api, api_of_new_account, app_env
from tests.unit.handlers.test_webhooks import OK, deliveries, received


@pytest.fixture
def quick() -> Iterator[PageServer]:
    with page_server() as server:
        yield server


@pytest.fixture
def staller() -> Iterator[TrickleServer]:
    # 100 Continue every 0.2 s for 16 s: each read is quick, the whole post never ends.
    with trickle_server("continue", every=0.2, times=80) as server:
        yield server


@pytest.fixture
def new_api(
    tmp_path: Path, database: Database, quick: PageServer, staller: TrickleServer
) -> Iterator[Callable[[], Api]]:
    settings = Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": f"{quick.port},{staller.port}",
            "CARDVAULT_WEBHOOK_SCHEDULE": "0,0.1,0.1,0.1",
            "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS": "1",
        }
    )
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        yield functools.partial(api_of_new_account, client, database, "stalls")


def _hook(api: Api, url: str) -> str:
    answer = api.post("/v1/webhooks", json={"url": url, "events": ["card.created"]})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["webhook"]["id"])


def _disabled(api: Api, webhook_id: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        shown: dict[str, Any] = api.get(f"/v1/webhooks/{webhook_id}").json()
        if not shown["enabled"]:
            return shown
        assert time.monotonic() < deadline, shown
        time.sleep(0.1)


def test_an_endpoint_that_never_finishes_answering_fails_each_attempt_and_is_disabled(
    new_api: Callable[[], Api], staller: TrickleServer
) -> None:
    api = new_api()
    webhook_id = _hook(api, staller.url())
    api.create(content="told to a stalling endpoint")
    assert _disabled(api, webhook_id)["disabledReason"] == "FAILING"
    (delivery,) = deliveries(api, webhook_id)
    assert (delivery["status"], delivery["attempts"]) == ("failed", 4)
    assert all(a["error"].startswith("FETCH_TIMEOUT") for a in delivery["attemptLog"]), [
        a["error"] for a in delivery["attemptLog"]
    ]
    assert len(staller.requests) == 4  # one post per attempt, each hung up on at its deadline
    assert staller.most_at_once == 1  # never sent again while an attempt ran


def test_another_accounts_webhook_arrives_while_two_endpoints_of_one_account_stall(
    new_api: Callable[[], Api], staller: TrickleServer, quick: PageServer
) -> None:
    stalling, other = new_api(), new_api()
    first, second = _hook(stalling, staller.url("/a")), _hook(stalling, staller.url("/b"))
    quick.routes["/hook"] = OK
    _hook(other, quick.url("/hook"))
    stalling.create(content="told to two stalling endpoints")
    deadline = time.monotonic() + 30
    while not staller.requests:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    other.create(content="told to a quick endpoint")
    assert len(received(quick, 1)) == 1
    # The stalling account's endpoints took turns on one of the two worker threads.
    for webhook_id in (first, second):
        assert _disabled(stalling, webhook_id)["disabledReason"] == "FAILING"
    assert staller.most_at_once == 1
    assert len(staller.requests) == 8
