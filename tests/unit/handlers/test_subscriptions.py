"""Feed subscriptions over HTTP: follow, list, get, change, stop; another account's answer 404;
a smart folder cannot take a feed's cards. (Polls: tests/unit/workers/test_subscriptions.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def follow(api: Api, **body: object) -> dict:  # type: ignore[type-arg]
    response = api.post("/v1/subscriptions", json={"url": "https://blog.example.com/feed.xml", **body})
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/v1/subscriptions/{response.json()['id']}"
    return response.json()  # type: ignore[no-any-return]


def test_follows_lists_changes_and_stops(api: Api) -> None:
    folder = api.post("/v1/folders", json={"name": "Blogs"}).json()["id"]
    made = follow(api, tags=["Reading", "reading"], folderId=folder)
    assert (
        made["tags"],
        made["folderId"],
        made["entriesSaved"],
        made["lastPolledAt"],
        made["lastError"],
    ) == (
        ["Reading"],
        folder,
        0,
        None,
        None,
    )
    assert [s["id"] for s in api.get("/v1/subscriptions").json()["items"]] == [made["id"]]
    changed = api.patch(f"/v1/subscriptions/{made['id']}", json={"folderId": None, "tags": []}).json()
    assert (changed["folderId"], changed["tags"]) == (None, [])
    assert api.request("DELETE", f"/v1/subscriptions/{made['id']}").status_code == 204
    assert_error(api.get(f"/v1/subscriptions/{made['id']}"), 404, "NOT_FOUND")


@pytest.mark.parametrize("url", ["ftp://example.com/feed", "not a url", "https://"])
def test_refuses_a_url_that_is_no_http_feed(api: Api, url: str) -> None:
    assert_error(api.post("/v1/subscriptions", json={"url": url}), 400, "INVALID_INPUT")


def test_a_smart_folder_takes_no_feed(api: Api) -> None:
    smart = api.post("/v1/folders", json={"name": "Smart", "query": "tag:x"}).json()["id"]
    assert_error(
        api.post("/v1/subscriptions", json={"url": "https://a.example/f", "folderId": smart}),
        409,
        "SMART_FOLDER",
    )


def test_another_account_sees_and_changes_nothing(make_api: Callable[[], Api]) -> None:
    owner, stranger = make_api(), make_api()
    made = follow(owner)
    folder = owner.post("/v1/folders", json={"name": "Mine"}).json()["id"]
    assert stranger.get("/v1/subscriptions").json()["items"] == []
    assert_error(stranger.get(f"/v1/subscriptions/{made['id']}"), 404, "NOT_FOUND")
    assert_error(stranger.patch(f"/v1/subscriptions/{made['id']}", json={"tags": ["x"]}), 404, "NOT_FOUND")
    assert_error(stranger.request("DELETE", f"/v1/subscriptions/{made['id']}"), 404, "NOT_FOUND")
    assert_error(
        stranger.post("/v1/subscriptions", json={"url": "https://a.example/f", "folderId": folder}),
        404,
        "NOT_FOUND",
    )
