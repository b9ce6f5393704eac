"""Conditional requests on webhooks: 304 while the endpoint is unchanged, a new ETag when it
is edited or its secret rotated, and 412 for a stale If-Match with nothing changed."""

from __future__ import annotations

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error

BODY = {"url": "https://hooks.example.com/cards", "events": ["card.created"]}


def test_304_until_it_changes_then_200(api: Api) -> None:
    made = api.post("/v1/webhooks", json=BODY)
    path = f"/v1/webhooks/{made.json()['webhook']['id']}"
    etag = made.headers["etag"]
    assert api.get(path).headers["etag"] == etag
    assert api.get(path, headers={"If-None-Match": etag}).status_code == 304
    rotated = api.post(f"{path}/rotate-secret", headers={"If-Match": etag})
    assert rotated.status_code == 200 and rotated.headers["etag"] != etag
    now = api.get(path, headers={"If-None-Match": etag})
    assert now.status_code == 200 and now.json()["previousSecretExpiresAt"] is not None


def test_a_stale_if_match_is_412_and_the_other_edit_stands(api: Api) -> None:
    made = api.post("/v1/webhooks", json=BODY)
    path = f"/v1/webhooks/{made.json()['webhook']['id']}"
    etag = made.headers["etag"]
    edited = api.patch(path, json={"description": "theirs"}, headers={"If-Match": etag})
    assert edited.status_code == 200 and edited.headers["etag"] != etag
    refused = assert_error(
        api.patch(path, json={"description": "mine", "enabled": False}, headers={"If-Match": etag}),
        412,
        "PRECONDITION_FAILED",
    )
    assert refused["details"] == {"etag": edited.headers["etag"]}
    assert (api.get(path).json()["description"], api.get(path).json()["enabled"]) == ("theirs", True)
    assert_error(api.post(f"{path}/test", headers={"If-Match": etag}), 412, "PRECONDITION_FAILED")
    assert api.get(f"{path}/deliveries").json()["items"] == []
