"""Webhooks over HTTP on each database, with the embedded worker sending to a receiver on a
loopback port: every delivery is checked with the `standardwebhooks` package's own verifier
(not our code), during a secret rotation too; the events the changes make; retries with one
webhook-id; 410, the last retry, a timeout, a redirect and Retry-After; pings, retries asked
for, the delivery log, and isolation between accounts."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from standardwebhooks import Webhook as Verifier
from standardwebhooks.webhooks import WebhookVerificationError
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.domain.models import Webhook
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import Answer, PageServer, page_server
from tests.conftest import Api, api_of_new_account, app_env
from tests.unit.handlers.test_cards import assert_error

OK: Answer = (200, {"Content-Type": "text/plain"}, b"ok")
FAIL: Answer = (500, {"Content-Type": "text/plain"}, b"no")


@pytest.fixture
def receiver() -> Iterator[PageServer]:
    with page_server() as server:
        server.routes["/hook"] = OK
        yield server


@pytest.fixture
def hooks_app(tmp_path: Path, database: Database, receiver: PageServer) -> Iterator[TestClient]:
    settings = Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(receiver.port),
            # The schedule in tenths of seconds, four attempts; an endpoint has a second.
            "CARDVAULT_WEBHOOK_SCHEDULE": "0,0.1,0.1,0.1",
            "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS": "1",
        }
    )
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def new_api(hooks_app: TestClient, database: Database) -> Callable[[], Api]:
    return functools.partial(api_of_new_account, hooks_app, database, "hooks")


@pytest.fixture
def api(new_api: Callable[[], Api]) -> Api:
    return new_api()


def hook(
    api: Api, receiver: PageServer, events: list[str] | None = None, path: str = "/hook"
) -> tuple[str, str]:
    """A new webhook to the receiver: its id and secret."""
    answer = api.post("/v1/webhooks", json={"url": receiver.url(path), "events": events or ["*"]})
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert answer.headers["location"] == f"/v1/webhooks/{made['webhook']['id']}"
    return made["webhook"]["id"], made["secret"]


def received(
    receiver: PageServer, count: int, path: str = "/hook", seconds: float = 20
) -> list[tuple[dict[str, str], bytes]]:
    """The first ``count`` requests the receiver has had on ``path``, once it has had them."""
    deadline = time.monotonic() + seconds
    while True:
        got = [(headers, body) for at, headers, body in list(receiver.received) if at == path]
        if len(got) >= count:
            return got
        assert time.monotonic() < deadline, f"{len(got)} of {count} deliveries arrived"
        time.sleep(0.02)


def verified(secret: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The payload, once the reference verifier has accepted its signature."""
    payload: dict[str, Any] = Verifier(secret).verify(body, headers)
    return payload


def events_of(receiver: PageServer, secret: str, count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (payload["type"], payload["data"])
        for payload in (verified(secret, h, b) for h, b in received(receiver, count))
    ]


def deliveries(api: Api, webhook_id: str) -> list[dict[str, Any]]:
    answer = api.get(f"/v1/webhooks/{webhook_id}/deliveries")
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]  # type: ignore[no-any-return]


def settled_delivery(api: Api, webhook_id: str, seconds: float = 20) -> dict[str, Any]:
    """The newest delivery once it has ended."""
    deadline = time.monotonic() + seconds
    while True:
        found = deliveries(api, webhook_id)
        if found and found[0]["status"] != "pending":
            return found[0]
        assert time.monotonic() < deadline, found[:1]
        time.sleep(0.05)


class TestEndpoints:
    def test_a_webhook_is_made_with_a_secret_shown_once(self, api: Api, receiver: PageServer) -> None:
        answer = api.post(
            "/v1/webhooks",
            json={"url": receiver.url("/hook"), "events": ["card.created"], "description": "wiki"},
        )
        assert answer.status_code == 201, answer.text
        made = answer.json()
        assert made["secret"].startswith("whsec_") and len(Verifier(made["secret"])._whsecret) == 32
        shown = made["webhook"]
        assert (shown["events"], shown["description"], shown["enabled"]) == (["card.created"], "wiki", True)
        assert shown["disabledReason"] is None and shown["previousSecretExpiresAt"] is None
        assert api.get(f"/v1/webhooks/{shown['id']}").json() == shown
        assert api.get("/v1/webhooks").json() == {"items": [shown]}
        assert made["secret"] not in api.get("/v1/webhooks").text

    @pytest.mark.parametrize(
        ("url", "says"),
        [
            ("ftp://example.com/hook", "https"),
            ("http://example.com/hook", "https"),
            ("https://user:pw@example.com/hook", "user name"),
            ("https://example.com:8443/hook", "port"),
            ("https://10.0.0.8/hook", "public"),
            ("https://169.254.169.254/latest", "public"),
            ("https://[fd00::1]/hook", "public"),
            ("https:///nohost", "https"),
            ("https://example.com/" + "a" * 2100, "2048"),
        ],
    )
    def test_urls_that_are_not_public_https_are_refused(self, api: Api, url: str, says: str) -> None:
        body = assert_error(
            api.post("/v1/webhooks", json={"url": url, "events": ["*"]}), 400, "INVALID_INPUT"
        )
        assert body["details"]["fields"][0]["field"] == "url" and says in body["error"]

    @pytest.mark.parametrize("events", [["*", "card.created"], ["card.created", "card.eaten"], []])
    def test_event_lists_must_name_known_types(
        self, api: Api, receiver: PageServer, events: list[str]
    ) -> None:
        assert_error(
            api.post("/v1/webhooks", json={"url": receiver.url("/hook"), "events": events}),
            400,
            "INVALID_INPUT",
        )

    def test_an_account_holds_twenty(self, api: Api, receiver: PageServer) -> None:
        for _ in range(20):
            hook(api, receiver)
        body = assert_error(
            api.post("/v1/webhooks", json={"url": receiver.url("/hook"), "events": ["*"]}),
            409,
            "WEBHOOK_LIMIT_REACHED",
        )
        assert body["details"] == {"limit": 20}

    def test_another_accounts_webhook_answers_like_a_missing_one(
        self, api: Api, new_api: Callable[[], Api], receiver: PageServer
    ) -> None:
        theirs, _ = hook(new_api(), receiver)
        for method, path, body in [
            ("GET", f"/v1/webhooks/{theirs}", None),
            ("PATCH", f"/v1/webhooks/{theirs}", {"enabled": False}),
            ("DELETE", f"/v1/webhooks/{theirs}", None),
            ("POST", f"/v1/webhooks/{theirs}/rotate-secret", None),
            ("POST", f"/v1/webhooks/{theirs}/test", None),
            ("GET", f"/v1/webhooks/{theirs}/deliveries", None),
            ("POST", f"/v1/webhooks/{theirs}/deliveries/msg_x/retry", None),
        ]:
            kwargs = {} if body is None else {"json": body}
            assert_error(api.request(method, path, **kwargs), 404, "NOT_FOUND")
        assert api.get("/v1/webhooks").json() == {"items": []}


class TestEvents:
    def test_changes_are_sent_as_signed_thin_events(self, api: Api, receiver: PageServer) -> None:
        webhook_id, secret = hook(api, receiver)
        card = api.create(content="hello", tags=["Reading"])
        # The card and its tag, among what the first dispatches told.
        deadline = time.monotonic() + 20
        while not {"card.created", "tag.updated"} <= (events := dict(events_of(receiver, secret, 2))).keys():
            assert time.monotonic() < deadline, list(events)
            time.sleep(0.02)
        assert events["card.created"]["id"] == card["id"] and events["card.created"]["sequence"] >= 1
        assert events["tag.updated"] == {
            **events["tag.updated"],
            "id": "reading",
            "name": "Reading",
            "count": 1,
        }
        api.patch(f"/v1/cards/{card['id']}", json={"content": "changed"})
        api.post(f"/v1/cards/{card['id']}/trash")
        api.request("DELETE", f"/v1/cards/{card['id']}")
        deadline = time.monotonic() + 20
        while "card.deleted" not in (types := [t for t, _ in events_of(receiver, secret, 2)]):
            assert time.monotonic() < deadline, types
            time.sleep(0.05)
        # What happened before a dispatch is told together: the edit and the move to Trash
        # may be one card.updated.
        assert {"card.updated", "tag.deleted"} <= set(types) and types.count("card.deleted") == 1
        headers, body = received(receiver, 1)[0]
        payload = json.loads(body)
        assert set(payload) == {"type", "timestamp", "data"} and payload["timestamp"].endswith("Z")
        assert headers["webhook-id"].startswith("msg_") and len(body) < 20_000
        assert {k.lower(): v for k, v in headers.items()}["content-type"] == "application/json"
        # The receiver has the last request before the worker records its answer: wait for that.
        deadline = time.monotonic() + 20
        logged = deliveries(api, webhook_id)
        while any(d["status"] == "pending" for d in logged):
            assert time.monotonic() < deadline, logged
            time.sleep(0.05)
            logged = deliveries(api, webhook_id)
        assert {d["status"] for d in logged} == {"succeeded"} and all(d["attempts"] == 1 for d in logged)

    def test_an_endpoint_is_sent_only_the_events_it_takes(self, api: Api, receiver: PageServer) -> None:
        _, secret = hook(api, receiver, ["folder.deleted"])
        made = api.post("/v1/folders", json={"name": "Box"}).json()
        api.create(content="not told")
        api.request("DELETE", f"/v1/folders/{made['id']}")
        assert [(event, data["id"]) for event, data in events_of(receiver, secret, 1)] == [
            ("folder.deleted", made["id"])
        ]
        time.sleep(0.3)
        assert len(received(receiver, 1)) == 1

    def test_a_tag_operation_is_told_when_it_ends(self, api: Api, receiver: PageServer) -> None:
        api.create(content="a", tags=["old"])
        _, secret = hook(api, receiver, ["tag_operation.completed"])
        started = api.post("/v1/tags/rename", json={"from": "old", "to": "new"}).json()
        ((event, data),) = events_of(receiver, secret, 1)
        assert (event, data["id"]) == ("tag_operation.completed", started["id"])
        # Told once: the changes made while it ran are not its end, however late they are read.
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            assert len(received(receiver, 1)) == 1
            time.sleep(0.05)


class TestDelivery:
    def test_a_failing_endpoint_gets_the_same_webhook_id_until_it_succeeds(
        self, api: Api, receiver: PageServer
    ) -> None:
        receiver.routes["/hook"] = [FAIL, FAIL, OK]
        webhook_id, secret = hook(api, receiver, ["card.created"])
        api.create(content="retried")
        got = received(receiver, 3)
        assert len({headers["webhook-id"] for headers, _ in got}) == 1
        assert len({body for _, body in got}) == 1
        for headers, body in got:
            verified(secret, headers, body)
        delivery = settled_delivery(api, webhook_id)
        assert (delivery["status"], delivery["attempts"], delivery["nextAttemptAt"]) == ("succeeded", 3, None)
        assert [a["responseStatus"] for a in delivery["attemptLog"]] == [500, 500, 200]
        assert delivery["payload"]["type"] == "card.created"

    def test_410_disables_the_endpoint(self, api: Api, receiver: PageServer) -> None:
        receiver.routes["/hook"] = (410, {}, b"")
        webhook_id, _ = hook(api, receiver)
        api.create(content="gone")
        assert settled_delivery(api, webhook_id)["status"] == "failed"
        shown = api.get(f"/v1/webhooks/{webhook_id}").json()
        assert (shown["enabled"], shown["disabledReason"]) == (False, "GONE") and shown["disabledAt"]
        body = assert_error(
            api.post(f"/v1/webhooks/{webhook_id}/deliveries/{deliveries(api, webhook_id)[0]['id']}/retry"),
            409,
            "WEBHOOK_DISABLED",
        )
        assert body["details"] == {"reason": "GONE"}

    def test_after_the_last_retry_the_endpoint_is_disabled(self, api: Api, receiver: PageServer) -> None:
        receiver.routes["/hook"] = FAIL
        webhook_id, _ = hook(api, receiver, ["card.created"])
        api.create(content="never")
        delivery = settled_delivery(api, webhook_id)
        assert (delivery["status"], delivery["attempts"]) == ("failed", 4)
        shown = api.get(f"/v1/webhooks/{webhook_id}").json()
        assert (shown["enabled"], shown["disabledReason"]) == (False, "FAILING")
        api.create(content="not sent to a disabled endpoint")
        time.sleep(0.3)
        assert len(received(receiver, 4)) == 4
        enabled = api.patch(f"/v1/webhooks/{webhook_id}", json={"enabled": True}).json()
        assert (enabled["enabled"], enabled["disabledReason"]) == (True, None)

    def test_a_timeout_and_a_redirect_are_failures_and_the_redirect_is_not_followed(
        self, api: Api, receiver: PageServer
    ) -> None:
        answers = iter([None, (302, {"Location": "/elsewhere"}, b""), OK])

        def in_turn() -> Answer:
            answer = next(answers, OK)
            if answer is None:
                time.sleep(1.5)  # past the endpoint's second
                return OK
            return answer

        receiver.routes["/hook"] = in_turn
        receiver.routes["/elsewhere"] = OK
        webhook_id, _ = hook(api, receiver, ["card.created"])
        api.create(content="patient")
        delivery = settled_delivery(api, webhook_id)
        log = delivery["attemptLog"]
        assert log[0]["responseStatus"] is None and log[0]["error"].startswith("FETCH_TIMEOUT")
        assert [a["responseStatus"] for a in log[1:]] == [302, 200]
        assert receiver.hits.get("/elsewhere") is None

    def test_retry_after_slows_the_endpoint_down(self, api: Api, receiver: PageServer) -> None:
        receiver.routes["/hook"] = [(429, {"Retry-After": "1"}, b""), OK]
        webhook_id, _ = hook(api, receiver, ["card.created"])
        api.create(content="later")
        delivery = settled_delivery(api, webhook_id)
        paused = api.get(f"/v1/webhooks/{webhook_id}").json()["pausedUntil"]
        log = delivery["attemptLog"]
        assert [a["responseStatus"] for a in log] == [429, 200]
        assert paused is not None and paused >= log[0]["attemptedAt"] + 1000
        assert log[1]["attemptedAt"] >= log[0]["attemptedAt"] + 1000

    def test_both_secrets_sign_during_a_rotation(self, api: Api, receiver: PageServer) -> None:
        webhook_id, old = hook(api, receiver, ["card.created"])
        rotated = api.post(f"/v1/webhooks/{webhook_id}/rotate-secret").json()
        new = rotated["secret"]
        assert (
            new != old and rotated["webhook"]["previousSecretExpiresAt"] > time.time() * 1000 + 23 * 3600_000
        )
        api.create(content="signed twice")
        ((headers, body),) = received(receiver, 1)
        assert len(headers["webhook-signature"].split(" ")) == 2
        assert verified(new, headers, body) == verified(old, headers, body)
        with pytest.raises(WebhookVerificationError):
            Verifier("whsec_" + "A" * 43 + "=").verify(body, headers)

    def test_a_ping_is_sent_once_and_a_delivery_can_be_sent_again(
        self, api: Api, receiver: PageServer
    ) -> None:
        webhook_id, secret = hook(api, receiver, ["card.deleted"])
        answer = api.post(f"/v1/webhooks/{webhook_id}/test")
        assert answer.status_code == 202 and answer.json()["event"] == "ping"
        assert "ratelimit-policy" in answer.headers
        ((headers, body),) = received(receiver, 1)
        assert verified(secret, headers, body)["data"] == {"webhookId": webhook_id}
        delivery = settled_delivery(api, webhook_id)
        again = api.post(f"/v1/webhooks/{webhook_id}/deliveries/{delivery['id']}/retry")
        assert again.status_code == 202 and again.json()["status"] == "pending"
        second = received(receiver, 2)[1][0]
        assert second["webhook-id"] == headers["webhook-id"]

    def test_a_deleted_webhook_is_sent_nothing_more(self, api: Api, receiver: PageServer) -> None:
        webhook_id, _ = hook(api, receiver, ["card.created"])
        assert api.request("DELETE", f"/v1/webhooks/{webhook_id}").status_code == 204
        api.create(content="after")
        time.sleep(0.3)
        assert received(receiver, 0) == []
        assert_error(api.get(f"/v1/webhooks/{webhook_id}"), 404, "NOT_FOUND")

    def test_a_name_that_is_not_public_is_refused_when_sent(
        self, api: Api, receiver: PageServer, database: Database
    ) -> None:
        webhook_id, _ = hook(api, receiver, ["card.created"])
        with database.transaction() as session:  # as if its name now resolved elsewhere
            session.execute(
                update(Webhook)
                .where(Webhook.id == webhook_id)
                .values(url=f"http://10.1.2.3:{receiver.port}/hook")
            )
        api.create(content="refused")
        delivery = settled_delivery(api, webhook_id)
        assert all(a["error"].startswith("BLOCKED_ADDRESS") for a in delivery["attemptLog"])
        assert received(receiver, 0) == []

    def test_deliveries_are_listed_newest_first_a_page_at_a_time(
        self, api: Api, receiver: PageServer
    ) -> None:
        webhook_id, _ = hook(api, receiver, ["card.created"])
        made = [api.create(content=f"card {n}")["id"] for n in range(3)]
        received(receiver, 3)
        first = api.get(f"/v1/webhooks/{webhook_id}/deliveries", params={"limit": 2}).json()
        assert len(first["items"]) == 2 and first["pageInfo"]["hasMore"] is True
        rest = api.get(
            f"/v1/webhooks/{webhook_id}/deliveries",
            params={"limit": 2, "cursor": first["pageInfo"]["nextCursor"]},
        ).json()
        ids = [d["payload"]["data"]["id"] for d in first["items"] + rest["items"]]
        assert sorted(ids) == sorted(made) and rest["pageInfo"]["hasMore"] is False
