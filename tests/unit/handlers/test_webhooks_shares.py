"""Share and feed subscription events delivered (issue 47): over HTTP, with the embedded worker
sending to a receiver on a loopback port and the `standardwebhooks` verifier checking each, an
endpoint that names share.* and subscription.* is sent them as their changes happen, one that
takes `*` is not, and no body holds a share's token; an endpoint may name all 22 event types."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from cardvault.domain.webhooks.endpoints import EVENT_TYPES
from harness.servers import PageServer
from tests.conftest import Api
from tests.unit.handlers import test_webhooks as hooks
from tests.unit.handlers.test_webhooks import events_of, hook, received

# The webhook tests' receiver and app (their fixtures, used as they are).
receiver, hooks_app, new_api, api = hooks.receiver, hooks.hooks_app, hooks.new_api, hooks.api

NAMED = [
    *("share.created", "share.updated", "share.deleted"),
    *("subscription.created", "subscription.updated", "subscription.deleted"),
]


def _told(receiver: PageServer, secret: str, wanted: tuple[str, str]) -> list[tuple[str, str]]:
    """The events the named endpoint has been sent, once ``wanted`` is among them."""
    deadline = time.monotonic() + 20
    while wanted not in (told := [(event, data["id"]) for event, data in events_of(receiver, secret, 1)]):
        assert time.monotonic() < deadline, told
        time.sleep(0.05)
    return told


def test_share_and_subscription_events_reach_an_endpoint_that_names_them(
    api: Api, receiver: PageServer
) -> None:
    receiver.routes["/every"] = hooks.OK
    hook(api, receiver, ["*"], path="/every")
    _, secret = hook(api, receiver, NAMED)
    card = api.create(content="to share")
    made = api.post("/v1/shares", json={"cardId": card["id"]}).json()
    token = urlsplit(made["url"]).path.removeprefix("/s/")
    _told(receiver, secret, ("share.created", made["id"]))
    assert api.patch(f"/v1/shares/{made['id']}", json={"title": "Seen"}).status_code == 200
    _told(receiver, secret, ("share.updated", made["id"]))
    followed = api.post("/v1/subscriptions", json={"url": "https://blog.example.com/feed.xml"}).json()
    _told(receiver, secret, ("subscription.created", followed["id"]))
    assert api.patch(f"/v1/subscriptions/{followed['id']}", json={"tags": ["x"]}).status_code == 200
    _told(receiver, secret, ("subscription.updated", followed["id"]))
    assert api.request("DELETE", f"/v1/shares/{made['id']}").status_code == 204
    assert api.request("DELETE", f"/v1/subscriptions/{followed['id']}").status_code == 204
    _told(receiver, secret, ("share.deleted", made["id"]))
    told = _told(receiver, secret, ("subscription.deleted", followed["id"]))
    assert sorted(told) == sorted(
        [(event, made["id"]) for event in NAMED[:3]] + [(event, followed["id"]) for event in NAMED[3:]]
    )
    # The endpoint of "*" was sent the card's events alone; no body holds the share's token.
    every = received(receiver, 1, path="/every")
    assert all(b'"type":"card.' in body for _, body in every)
    assert all(token.encode() not in body for _, _, body in list(receiver.received))


def test_an_endpoint_may_name_every_event_type(api: Api, receiver: PageServer) -> None:
    every = list(EVENT_TYPES)
    assert len(every) == 22
    answer = api.post("/v1/webhooks", json={"url": receiver.url("/hook"), "events": every})
    assert answer.status_code == 201, answer.text
    assert answer.json()["webhook"]["events"] == every
