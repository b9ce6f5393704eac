"""Smart folders over HTTP: a folder made with a query holds what matches now (new, edited and
trashed cards followed), lists through folder= and folder:, counts like total, refuses manual
adds and removes, changes its query, and is shared with a feed that follows the query."""

from __future__ import annotations

from collections.abc import Callable

import feedparser

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_shares import path, share


def smart(api: Api, query: str, name: str = "Smart") -> dict:  # type: ignore[type-arg]
    response = api.post("/v1/folders", json={"name": name, "query": query})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def listed(api: Api, **params: str) -> list[str]:
    response = api.get("/v1/cards", params={"limit": "100", **params})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


class TestSmartFolders:
    def test_holds_what_matches_now(self, api: Api) -> None:
        folder = smart(api, "tag:recipes soup")
        assert (folder["kind"], folder["query"], folder["cardCount"]) == ("smart", "tag:recipes soup", 0)
        soup = api.create(content="Tomato soup", tags=["recipes"])
        api.create(content="Tomato salad", tags=["recipes"])
        api.create(content="Soup of the day")
        assert listed(api, folder=folder["id"]) == [soup["id"]]
        assert listed(api, q="folder:Smart") == [soup["id"]]
        assert api.get(f"/v1/folders/{folder['id']}").json()["cardCount"] == 1
        edited = api.create(content="Onion stew", tags=["recipes"])
        assert api.patch(f"/v1/cards/{edited['id']}", json={"content": "Onion soup"}).status_code == 200
        assert set(listed(api, folder=folder["id"])) == {soup["id"], edited["id"]}
        assert api.post(f"/v1/cards/{soup['id']}/trash").status_code == 200
        assert listed(api, folder=folder["id"]) == [edited["id"]]
        assert api.get("/v1/folders").json()["items"][0]["cardCount"] == 1

    def test_joins_the_rest_of_q(self, api: Api) -> None:
        folder = smart(api, "type:link")
        kept = api.create(url="https://example.com/kept", tags=["keep"])
        api.create(url="https://example.com/other")
        assert listed(api, q=f"folder:{folder['id']} tag:keep") == [kept["id"]]

    def test_refuses_manual_adds_and_removes(self, api: Api) -> None:
        folder = smart(api, "is:favorite")
        card = api.create(content="x")
        for method in ("POST", "DELETE"):
            answer = api.request(method, f"/v1/folders/{folder['id']}/cards", json={"cardIds": [card["id"]]})
            assert_error(answer, 409, "SMART_FOLDER")

    def test_the_query_can_be_changed_and_a_manual_folder_has_none(self, api: Api) -> None:
        folder = smart(api, "tag:a")
        b = api.create(content="b", tags=["b"])
        changed = api.patch(f"/v1/folders/{folder['id']}", json={"query": "tag:b"}).json()
        assert changed["query"] == "tag:b" and changed["cardCount"] == 1
        assert listed(api, folder=folder["id"]) == [b["id"]]
        manual = api.post("/v1/folders", json={"name": "Manual"}).json()
        assert manual["kind"] == "manual" and manual["query"] is None
        assert_error(api.patch(f"/v1/folders/{manual['id']}", json={"query": "x"}), 400, "INVALID_INPUT")

    def test_bad_queries_are_refused(self, api: Api) -> None:
        assert_error(
            api.post("/v1/folders", json={"name": "a", "query": "type:banana"}), 400, "INVALID_QUERY"
        )
        assert_error(api.post("/v1/folders", json={"name": "b", "query": "   "}), 400, "INVALID_INPUT")
        first = smart(api, "tag:x", name="First")
        nested = api.post("/v1/folders", json={"name": "c", "query": f"folder:{first['id']}"})
        assert_error(nested, 400, "INVALID_QUERY")
        other = api.post("/v1/folders", json={"name": "Plain"}).json()
        assert_error(
            api.get("/v1/cards", params={"folder": [first["id"], other["id"]]}), 400, "INVALID_QUERY"
        )
        assert_error(api.get("/v1/cards", params={"q": "-folder:First"}), 400, "INVALID_QUERY")

    def test_another_accounts_smart_folder_names_nothing(self, make_api: Callable[[], Api]) -> None:
        owner, stranger = make_api(), make_api()
        folder = smart(owner, "tag:mine")
        stranger.create(content="theirs", tags=["mine"])
        assert listed(stranger, folder=folder["id"]) == []


class TestSmartFolderShares:
    def test_a_shared_smart_folder_and_its_feed_follow_the_query(self, api: Api) -> None:
        folder = smart(api, "tag:public")
        first = api.create(content="First public", tags=["public"])
        api.create(content="Private one")
        made = share(api, folderId=folder["id"])
        page = api.client.get(path(made["url"]))
        assert "First public" in page.text and "Private one" not in page.text
        feed = api.client.get(path(made["feedUrl"]))
        etag = feed.headers["etag"]
        assert [e.title for e in feedparser.parse(feed.content).entries] == ["First public"]
        second = api.create(content="Second public", tags=["public"])
        again = api.client.get(path(made["feedUrl"]), headers={"If-None-Match": etag})
        assert again.status_code == 200
        titles = [e.title for e in feedparser.parse(again.content).entries]
        assert titles == ["Second public", "First public"]
        assert api.client.get(f"{path(made['url'])}/cards/{second['id']}/picture").status_code == 404  # none
        assert api.post(f"/v1/cards/{first['id']}/trash").status_code == 200
        assert "First public" not in api.client.get(path(made["url"])).text
