"""Tag endpoints over HTTP, with the embedded worker running the operations."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def wait_done(api: Api, operation: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        current = api.get(f"/v1/tags/operations/{operation['operationId']}").json()
        if current["status"] != "running" or time.monotonic() > deadline:
            return current  # type: ignore[no-any-return]
        time.sleep(0.05)


class TestRenameTag:
    def test_returns_202_and_the_operation_completes(self, api: Api) -> None:
        card = api.create(content="a", tags=["Old"])
        response = api.post("/v1/tags/rename", json={"from": "OLD", "to": " New "})
        assert response.status_code == 202
        body = response.json()
        assert response.headers["location"] == f"/v1/tags/operations/{body['operationId']}"
        assert (body["kind"], body["from"], body["to"], body["total"]) == ("rename", "old", "New", 1)
        assert body["id"] == body["operationId"] and body["status"] in {"running", "completed"}
        done = wait_done(api, body)
        assert (done["status"], done["processed"], done["changed"], done["error"]) == (
            "completed",
            1,
            1,
            None,
        )
        assert done["completedAt"] >= done["createdAt"]
        after = api.get(f"/v1/cards/{card['id']}").json()
        assert after["tags"] == ["New"] and after["updatedAt"] >= card["updatedAt"]
        assert [i["id"] for i in api.get("/v1/cards", params={"tag": "new"}).json()["items"]] == [card["id"]]

    def test_returns_409_tag_exists(self, api: Api) -> None:
        api.create(tags=["a", "b"])
        body = assert_error(api.post("/v1/tags/rename", json={"from": "a", "to": "B"}), 409, "TAG_EXISTS")
        assert body["details"]["tag"] == "B"

    def test_returns_404_when_no_card_has_the_tag(self, api: Api) -> None:
        assert_error(api.post("/v1/tags/rename", json={"from": "ghost", "to": "x"}), 404, "NOT_FOUND")

    @pytest.mark.parametrize(
        "body", [{"from": "", "to": "x"}, {"from": "a", "to": "x" * 65}, {"from": "a", "to": "\u0007"}]
    )
    def test_returns_400_invalid_tag(self, api: Api, body: dict[str, str]) -> None:
        assert_error(api.post("/v1/tags/rename", json=body), 400, "INVALID_TAG")

    def test_returns_400_for_missing_fields(self, api: Api) -> None:
        assert_error(api.post("/v1/tags/rename", json={"from": "a"}), 400, "INVALID_INPUT")


class TestMergeAndDeleteTag:
    def test_merge_keeps_one_copy(self, api: Api) -> None:
        card = api.create(tags=["todo", "Later"])
        wait_done(api, api.post("/v1/tags/merge", json={"from": "TODO", "into": "later"}).json())
        assert api.get(f"/v1/cards/{card['id']}").json()["tags"] == ["Later"]

    def test_delete_removes_the_tag_and_keeps_the_card(self, api: Api) -> None:
        card = api.create(content="stay", tags=["gone", "kept"])
        response = api.post("/v1/tags/delete", json={"tag": "GONE"})
        assert response.status_code == 202 and response.json()["to"] is None
        wait_done(api, response.json())
        assert api.get(f"/v1/cards/{card['id']}").json()["tags"] == ["kept"]

    def test_delete_refuses_a_tag_over_64_characters(self, api: Api) -> None:
        assert_error(api.post("/v1/tags/delete", json={"tag": "x" * 65}), 400, "INVALID_TAG")


class TestGetTagOperation:
    def test_another_accounts_operation_answers_like_a_missing_one(self, make_api: Callable[[], Api]) -> None:
        owner, intruder = make_api(), make_api()
        owner.create(tags=["mine"])
        operation = owner.post("/v1/tags/delete", json={"tag": "mine"}).json()
        foreign = assert_error(intruder.get(f"/v1/tags/operations/{operation['id']}"), 404, "NOT_FOUND")
        missing = assert_error(intruder.get("/v1/tags/operations/tagop_nothing"), 404, "NOT_FOUND")
        assert (foreign["error"], foreign["details"]) == (missing["error"], missing["details"])

    def test_another_accounts_tag_is_not_found_and_untouched(self, make_api: Callable[[], Api]) -> None:
        owner, intruder = make_api(), make_api()
        card = owner.create(tags=["private"])
        assert_error(intruder.post("/v1/tags/delete", json={"tag": "private"}), 404, "NOT_FOUND")
        assert owner.get(f"/v1/cards/{card['id']}").json()["tags"] == ["private"]
        assert intruder.get("/v1/tags").json()["total"] == 0


class TestListTags:
    def test_lists_tags_with_counts_and_pages(self, api: Api) -> None:
        api.create(tags=["b", "A"])
        api.create(tags=["a"])
        first = api.get("/v1/tags", params={"limit": 1}).json()
        assert first["items"] == [{"name": "A", "count": 2}] and first["total"] == 2
        rest = api.get("/v1/tags", params={"limit": 1, "cursor": first["pageInfo"]["nextCursor"]}).json()
        assert rest["items"] == [{"name": "b", "count": 1}] and rest["pageInfo"]["hasMore"] is False
        assert_error(
            api.get("/v1/tags", params={"cursor": first["pageInfo"]["nextCursor"], "sort": "count"}),
            400,
            "INVALID_CURSOR",
        )
