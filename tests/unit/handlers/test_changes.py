"""The changes feed over HTTP (listChanges) on each database: every resource type as its own GET
shows it, tombstones, paging with nextCursor, cursor=latest, expired, foreign and altered
cursors, and isolation between accounts."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import update

from cardvault.domain import changes
from cardvault.domain.cursors import encode_cursor
from cardvault.domain.db import Database
from cardvault.domain.models import Change
from cardvault.settings import Settings
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_exports import settled, wait_for_export
from tests.unit.handlers.test_uploads import image_card, png, processed

RESOURCES = ("card", "folder", "tag", "tagOperation", "export")


def feed(api: Api, cursor: str | None = None, limit: int | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
    if limit is not None:
        params["limit"] = limit
    answer = api.get("/v1/changes", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    for item in body["items"]:  # exactly the named resource is given, on an upsert alone
        shown = {field for field in RESOURCES if item[field] is not None}
        assert shown == ({item["type"]} if item["action"] == "upsert" else set()), item
    return body


def everything(api: Api, cursor: str | None = None, limit: int = 100) -> tuple[list[dict[str, Any]], str]:
    """Every change after ``cursor``, following nextCursor, and the cursor to keep."""
    items: list[dict[str, Any]] = []
    while True:
        page = feed(api, cursor, limit)
        items += page["items"]
        cursor = page["pageInfo"]["nextCursor"]
        assert isinstance(cursor, str)
        if not page["pageInfo"]["hasMore"]:
            return items, cursor


def made(api: Api, **body: Any) -> dict[str, Any]:
    """A new card, once its processing has settled (its results are changes of their own)."""
    card = api.create(**body)
    settled(api, card["id"])
    return card


def edited(api: Api, card_id: str, **body: Any) -> None:
    assert api.patch(f"/v1/cards/{card_id}", json=body).status_code == 200
    settled(api, card_id)


def by_resource(items: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(item["type"], item["id"]): item for item in items}


def test_an_account_without_changes_answers_an_empty_page_with_a_cursor_to_keep(api: Api) -> None:
    for cursor in (None, "latest"):
        page = feed(api, cursor)
        assert page["items"] == [] and page["pageInfo"]["hasMore"] is False
        assert page["pageInfo"]["nextCursor"]


def test_a_card_is_given_once_as_its_extended_card_then_as_a_tombstone(api: Api) -> None:
    card = made(api, content="first draft")
    edited(api, card["id"], content="second draft")
    items, cursor = everything(api)
    (item,) = [i for i in items if i["type"] == "card"]
    assert (item["id"], item["action"]) == (card["id"], "upsert")
    extended = api.get(f"/v1/cards/{card['id']}/extended").json()
    assert item["card"] == extended and extended["content"] == "second draft"
    assert item["changedAt"] >= card["createdAt"]

    api.post(f"/v1/cards/{card['id']}/trash")
    (trashed,) = [i for i in everything(api, cursor)[0] if i["type"] == "card"]
    assert trashed["action"] == "upsert" and trashed["card"]["isDeleted"] is True
    assert trashed["sequence"] > item["sequence"]

    assert api.request("DELETE", f"/v1/cards/{card['id']}").status_code == 204
    (gone,) = [
        i for i in everything(api, cursor)[0] if i["type"] == "card"
    ]  # the same cursor: the card's latest change only
    assert (gone["type"], gone["id"], gone["action"], gone["card"]) == ("card", card["id"], "delete", None)
    assert gone["sequence"] > trashed["sequence"]


def test_folders_and_the_cards_they_held_are_recorded(api: Api) -> None:
    card = made(api, content="in a folder")
    box = api.post("/v1/folders", json={"name": "Recipes"}).json()
    api.post(f"/v1/folders/{box['id']}/cards", json={"cardIds": [card["id"]]})
    api.patch(f"/v1/folders/{box['id']}", json={"name": "Dinners"})
    items, cursor = everything(api)
    shown = by_resource(items)
    assert shown["folder", box["id"]]["folder"] == api.get(f"/v1/folders/{box['id']}").json()
    assert shown["folder", box["id"]]["folder"]["name"] == "Dinners"
    assert shown["card", card["id"]]["card"]["folderIds"] == [box["id"]]

    api.post(f"/v1/cards/{card['id']}/trash")  # its folder counts only cards outside Trash
    trashed = by_resource(everything(api, cursor)[0])
    assert trashed["folder", box["id"]]["folder"]["cardCount"] == 0
    api.post(f"/v1/cards/{card['id']}/restore")
    other = made(api, content="another")
    cursor = feed(api, "latest")["pageInfo"]["nextCursor"]
    api.post(f"/v1/folders/{box['id']}/cards", json={"cardIds": [other["id"]]})
    assert by_resource(everything(api, cursor)[0])["folder", box["id"]]["folder"]["cardCount"] == 2
    cursor = feed(api, "latest")["pageInfo"]["nextCursor"]
    api.request("DELETE", f"/v1/folders/{box['id']}/cards", json={"cardIds": [other["id"]]})
    assert by_resource(everything(api, cursor)[0])["folder", box["id"]]["folder"]["cardCount"] == 1

    assert api.request("DELETE", f"/v1/folders/{box['id']}").status_code == 204
    after = by_resource(everything(api, cursor)[0])
    assert after["folder", box["id"]]["action"] == "delete"
    assert after["card", card["id"]]["card"]["folderIds"] == []


def test_tags_and_tag_operations_are_recorded_as_their_gets_show_them(api: Api) -> None:
    made(api, content="a", tags=["Reading"])
    made(api, content="b", tags=["reading", "later"])
    items, cursor = everything(api)
    shown = by_resource(items)
    assert shown["tag", "reading"]["tag"] == {"name": "Reading", "count": 2}
    assert shown["tag", "later"]["tag"] == {"name": "later", "count": 1}

    started = api.post("/v1/tags/rename", json={"from": "reading", "to": "Books"}).json()
    deadline = time.monotonic() + 30
    while api.get(f"/v1/tags/operations/{started['id']}").json()["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    after = by_resource(everything(api, cursor)[0])
    assert after["tag", "reading"]["action"] == "delete" and after["tag", "reading"]["tag"] is None
    assert after["tag", "books"]["tag"] == {"name": "Books", "count": 2}
    operation = after["tagOperation", started["id"]]["tagOperation"]
    assert operation == api.get(f"/v1/tags/operations/{started['id']}").json()
    assert operation["status"] == "completed"
    assert ("tag", "later") not in after  # untouched


def test_an_export_is_recorded_as_it_progresses_and_ends(files_api: Api) -> None:
    made(files_api, content="exported")
    cursor = feed(files_api, "latest")["pageInfo"]["nextCursor"]
    job = wait_for_export(files_api) if files_api.post("/v1/exports").status_code == 202 else None
    assert job is not None and job["status"] == "ready"
    (item,) = [i for i in everything(files_api, cursor)[0] if i["type"] == "export"]
    shown = files_api.get(f"/v1/exports/{job['id']}").json()["job"]
    signed = ("downloadUrl",)  # signed again on every read
    assert {k: v for k, v in item["export"].items() if k not in signed} == {
        k: v for k, v in shown.items() if k not in signed
    }
    assert item["export"]["status"] == "ready" and item["export"]["downloadUrl"]


def test_pages_follow_next_cursor_and_a_kept_cursor_reads_only_what_came_after(api: Api) -> None:
    ids = [made(api, content=f"card {n}")["id"] for n in range(5)]
    first = feed(api, limit=2)
    assert len(first["items"]) == 2 and first["pageInfo"]["hasMore"] is True
    items, cursor = everything(api, limit=2)
    assert [i["id"] for i in items if i["type"] == "card"] == ids
    assert [i["sequence"] for i in items] == sorted(i["sequence"] for i in items)
    assert items[:2] == first["items"]
    assert feed(api, cursor)["items"] == []
    edited(api, ids[1], content="changed")
    (again,) = [i for i in feed(api, cursor)["items"] if i["type"] == "card"]
    assert (again["id"], again["card"]["content"]) == (ids[1], "changed")


def test_latest_skips_what_was_there_and_reads_what_comes_next(api: Api) -> None:
    made(api, content="listed already")
    page = feed(api, "latest")
    assert page["items"] == [] and page["pageInfo"]["hasMore"] is False
    later = made(api, content="new")
    assert {i["id"] for i in everything(api, page["pageInfo"]["nextCursor"])[0] if i["type"] == "card"} == {
        later["id"]
    }


def test_another_accounts_changes_and_cursors_are_not_this_accounts(make_api: Any) -> None:
    mine, theirs = make_api(), make_api()
    made(theirs, content="private", tags=["secret"])
    made(mine, content="mine")
    items = everything(mine)[0]
    assert {i["card"]["content"] for i in items if i["type"] == "card"} == {"mine"}
    assert ("tag", "secret") not in by_resource(items)
    foreign = feed(theirs, "latest")["pageInfo"]["nextCursor"]
    assert_error(mine.get("/v1/changes", params={"cursor": foreign}), 400, "INVALID_CURSOR")
    own = feed(mine)["pageInfo"]["nextCursor"]
    altered = own[:-2] + ("AA" if not own.endswith("AA") else "BB")
    assert_error(mine.get("/v1/changes", params={"cursor": altered}), 400, "INVALID_CURSOR")


def test_a_cursor_before_the_changes_kept_or_past_the_last_answers_410(
    api: Api, database: Database, settings: Settings
) -> None:
    old = feed(api)["pageInfo"]["nextCursor"]  # before any change
    kept = [made(api, content=f"card {n}")["id"] for n in range(3)]
    with database.transaction() as session:  # the first two are past the days kept
        session.execute(
            update(Change)
            .where(Change.account_id == api.account_id, Change.resource_id.in_(kept[:2]))
            .values(changed_at=1)
        )
    with database.transaction() as session:
        assert changes.purge(session, older_than=1_000) >= 2
    body = assert_error(api.get("/v1/changes", params={"cursor": old}), 410, "CURSOR_EXPIRED")
    assert "list everything again" in body["error"] and body["retryAt"] is None
    # No cursor: from the oldest change kept.
    assert [i["id"] for i in everything(api)[0] if i["type"] == "card"] == kept[2:]

    ahead = encode_cursor(settings.secret_key, scope=f"changes:{api.account_id}", position=[99])
    assert_error(api.get("/v1/changes", params={"cursor": ahead}), 410, "CURSOR_EXPIRED")
    for position in ([-1], ["7"]):
        bad = encode_cursor(settings.secret_key, scope=f"changes:{api.account_id}", position=position)
        assert_error(api.get("/v1/changes", params={"cursor": bad}), 400, "INVALID_CURSOR")


def _unsigned(value: Any) -> Any:
    """The value with every signed URL (signed anew, with a new expiry, on each read) named as one."""
    if isinstance(value, dict):
        return {key: _unsigned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unsigned(item) for item in value]
    signed = isinstance(value, str) and value.startswith("http") and ("/files/" in value or "?" in value)
    if signed:
        return "signed file URL"
    return value


def test_a_file_card_is_given_as_its_extended_card(files_api: Api) -> None:
    card_id = image_card(files_api, png())
    processed(files_api, card_id)
    (item,) = [i for i in everything(files_api)[0] if i["type"] == "card"]
    shown = files_api.get(f"/v1/cards/{card_id}/extended").json()
    assert shown["fileUrl"] and shown["colors"] and shown["fileWidth"]
    assert _unsigned(item["card"]) == _unsigned(shown)
