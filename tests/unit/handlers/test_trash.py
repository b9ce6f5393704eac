"""Trash and archive over HTTP (the purge of expired Trash: tests/unit/workers/test_trash.py)."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


class TestTrash:
    def test_trashed_cards_leave_lists_and_search_and_keep_their_data(self, api: Api) -> None:
        card = api.create(content="findable words", tags=["t"], notes="n")
        moved = api.post(f"/v1/cards/{card['id']}/trash")
        assert moved.status_code == 200 and moved.json()["isDeleted"] is True
        assert api.get("/v1/cards", params={"include": "total"}).json()["total"] == 0
        assert api.get("/v1/cards", params={"q": "findable"}).json()["items"] == []
        assert api.get("/v1/cards", params={"tag": "t", "archived": "include"}).json()["items"] == []
        kept = api.get(f"/v1/cards/{card['id']}").json()
        assert (kept["content"], kept["notes"], kept["tags"]) == ("findable words", "n", ["t"])
        trash = api.get("/v1/trash").json()
        assert [i["id"] for i in trash["items"]] == [card["id"]]
        item = trash["items"][0]
        assert item["purgeAt"] - item["deletedAt"] == 30 * 86_400_000

    def test_restore_brings_the_card_back(self, api: Api) -> None:
        card = api.create(content="back")
        api.post(f"/v1/cards/{card['id']}/trash")
        restored = api.post(f"/v1/cards/{card['id']}/restore").json()
        assert restored["isDeleted"] is False
        assert [i["id"] for i in api.get("/v1/cards").json()["items"]] == [card["id"]]
        assert api.get("/v1/trash", params={"include": "total"}).json()["total"] == 0

    def test_done_archive_and_unarchive_are_refused_in_trash(self, api: Api) -> None:
        link = api.create(url="https://example.com")
        api.post(f"/v1/cards/{link['id']}/trash")
        for action in ("done", "archive", "unarchive"):
            assert_error(api.post(f"/v1/cards/{link['id']}/{action}"), 409, "CARD_IN_TRASH")

    def test_deleting_forever_needs_trash_first_and_then_the_card_is_gone(self, api: Api) -> None:
        card = api.create(content="x", tags=["t"])
        assert_error(api.request("DELETE", f"/v1/cards/{card['id']}"), 409, "CARD_NOT_IN_TRASH")
        api.post(f"/v1/cards/{card['id']}/trash")
        assert api.request("DELETE", f"/v1/cards/{card['id']}").status_code == 204
        assert_error(api.get(f"/v1/cards/{card['id']}"), 404, "NOT_FOUND")
        assert api.get("/v1/tags").json()["total"] == 0

    def test_emptying_the_trash_deletes_only_trashed_cards(self, api: Api) -> None:
        kept = api.create(content="kept")
        for i in range(3):
            api.post(f"/v1/cards/{api.create(content=str(i))['id']}/trash")
        assert api.request("DELETE", "/v1/trash").json() == {"deletedCount": 3}
        assert [i["id"] for i in api.get("/v1/cards").json()["items"]] == [kept["id"]]

    def test_tag_operations_reach_cards_in_trash(self, api: Api) -> None:
        card = api.create(content="x", tags=["old"])
        api.post(f"/v1/cards/{card['id']}/trash")
        operation = api.post("/v1/tags/rename", json={"from": "old", "to": "new"}).json()
        import time

        deadline = time.monotonic() + 20
        while api.get(f"/v1/tags/operations/{operation['id']}").json()["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        api.post(f"/v1/cards/{card['id']}/restore")
        assert api.get(f"/v1/cards/{card['id']}").json()["tags"] == ["new"]

    def test_another_accounts_card_answers_like_a_missing_one(self, make_api: Callable[[], Api]) -> None:
        owner, intruder = make_api(), make_api()
        card = owner.create(content="x")
        owner.post(f"/v1/cards/{card['id']}/trash")
        for method, action in [
            ("POST", "/trash"),
            ("POST", "/restore"),
            ("POST", "/archive"),
            ("POST", "/unarchive"),
            ("DELETE", ""),
        ]:
            foreign = assert_error(
                intruder.request(method, f"/v1/cards/{card['id']}{action}"), 404, "NOT_FOUND"
            )
            missing = assert_error(intruder.request(method, f"/v1/cards/crd_none{action}"), 404, "NOT_FOUND")
            assert foreign["error"] == missing["error"]
        assert intruder.request("DELETE", "/v1/trash").json() == {"deletedCount": 0}
        assert owner.get("/v1/trash", params={"include": "total"}).json()["total"] == 1


class TestArchive:
    def test_archived_cards_leave_the_default_list_and_are_reachable_by_filter(self, api: Api) -> None:
        kept, archived = api.create(content="k"), api.create(content="a")
        body = api.post(f"/v1/cards/{archived['id']}/archive").json()
        assert body["isArchived"] is True and body["archivedAt"] >= archived["createdAt"]
        again = api.post(f"/v1/cards/{archived['id']}/archive").json()
        assert again["archivedAt"] == body["archivedAt"]
        assert [i["id"] for i in api.get("/v1/cards").json()["items"]] == [kept["id"]]
        assert [i["id"] for i in api.get("/v1/cards", params={"archived": "only"}).json()["items"]] == [
            archived["id"]
        ]
        assert api.get("/v1/cards", params={"archived": "include", "include": "total"}).json()["total"] == 2
        unarchived = api.post(f"/v1/cards/{archived['id']}/unarchive").json()
        assert (unarchived["isArchived"], unarchived["archivedAt"]) == (False, None)

    def test_an_archived_card_returns_to_the_archive_after_trash(self, api: Api) -> None:
        card = api.create(content="a")
        api.post(f"/v1/cards/{card['id']}/archive")
        api.post(f"/v1/cards/{card['id']}/trash")
        assert api.get("/v1/cards", params={"archived": "only"}).json()["items"] == []
        api.post(f"/v1/cards/{card['id']}/restore")
        assert [i["id"] for i in api.get("/v1/cards", params={"archived": "only"}).json()["items"]] == [
            card["id"]
        ]
