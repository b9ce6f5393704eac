"""bulkCards over HTTP: each item alone or, atomic, all or none; the bounds, foreign ids, the
Idempotency-Key, the rate limits counting items, the changes feed and the pipeline."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import ATTEMPTS, Database
from cardvault.domain.models import Card, Change
from cardvault.domain.models.pipeline import CardStage
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import Api, connections_cut
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_cards_conditional import settled_card

BULK = "/v1/cards/bulk"


def _cards(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        count = select(func.count()).select_from(Card).where(Card.account_id == account_id)
        return int(session.scalar(count) or 0)


def _bulk(api: Api, operation: str, items: list[dict[str, Any]], **more: Any) -> list[dict[str, Any]]:
    response = api.post(BULK, json={"operation": operation, "items": items, **more})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    assert [r["index"] for r in results] == list(range(len(items)))
    return results


def _extended(api: Api, card_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/cards/{card_id}/extended")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_a_hundred_creates_make_a_hundred_cards_in_one_request(api: Api, database: Database) -> None:
    results = _bulk(api, "create", [{"content": f"card {i}", "tags": ["bulk"]} for i in range(100)])
    assert {r["status"] for r in results} == {200} and all(r["error"] is None for r in results)
    assert [r["card"]["content"] for r in results] == [f"card {i}" for i in range(100)]
    assert all(r["cardId"] == r["card"]["id"] for r in results)
    assert _cards(database, api.account_id) == 100
    listed = api.get("/v1/cards", params={"tag": "bulk", "include": "total"}).json()
    assert listed["total"] == 100
    with database.transaction(write=False) as session:  # the pipeline queued per created card
        pks = select(Card.pk).where(Card.account_id == api.account_id)
        stages = session.scalar(select(func.count()).select_from(CardStage).where(CardStage.card_pk.in_(pks)))
    assert stages == 100  # each text card's ai stage


def test_a_hundred_and_one_items_change_nothing(api: Api, database: Database) -> None:
    items = [{"content": f"card {i}"} for i in range(101)]
    body = assert_error(api.post(BULK, json={"operation": "create", "items": items}), 400, "INVALID_INPUT")
    assert body["details"]["fields"][0]["location"] == "body"
    assert_error(api.post(BULK, json={"operation": "create", "items": []}), 400, "INVALID_INPUT")
    assert_error(api.post(BULK, json={"operation": "nope", "items": [{}]}), 400, "INVALID_INPUT")
    assert _cards(database, api.account_id) == 0


def test_a_mixed_batch_fails_only_its_bad_items(api: Api) -> None:
    first, second = api.create(content="a")["id"], api.create(content="b")["id"]
    api.post(f"/v1/cards/{second}/trash")
    items = [
        {"cardId": first},
        {"cardId": "crd_missing"},
        {"cardId": second},  # in Trash: archiveCard answers 409
        {"cardId": first, "isFavorited": True},  # not a field of archive
    ]
    results = _bulk(api, "archive", items)
    assert [r["status"] for r in results] == [200, 404, 409, 400]
    assert results[0]["card"]["id"] == first and results[0]["error"] is None
    assert [r["error"]["code"] for r in results[1:]] == ["NOT_FOUND", "CARD_IN_TRASH", "INVALID_INPUT"]
    assert all(set(r["error"]) == {"code", "error", "details", "requestId", "retryAt"} for r in results[1:])
    assert results[3]["error"]["details"]["fields"][0]["field"] == "isFavorited"
    assert [r["cardId"] for r in results] == [first, "crd_missing", second, first]
    assert _extended(api, first)["isArchived"] is True
    assert _extended(api, second)["isArchived"] is False


def test_each_operation_does_what_its_single_operation_does(api: Api) -> None:
    card = api.create(content="x", tags=["Keep", "drop"])["id"]
    folder = api.post("/v1/folders", json={"name": "F"}).json()["id"]
    one = [{"cardId": card}]
    assert _bulk(api, "update", [{"cardId": card, "notes": "n"}])[0]["card"]["notes"] == "n"
    assert _bulk(api, "favorite", [{"cardId": card, "isFavorited": True}])[0]["card"]["isFavorited"] is True
    assert _bulk(api, "tag", [{"cardId": card, "tags": ["new", "KEEP"]}])[0]["card"]["tags"] == [
        "Keep",
        "drop",
        "new",
    ]
    assert _bulk(api, "untag", [{"cardId": card, "tags": ["DROP"]}])[0]["card"]["tags"] == ["Keep", "new"]
    assert _bulk(api, "addToFolder", [{"cardId": card, "folderId": folder}])[0]["card"]["folderIds"] == [
        folder
    ]
    assert (
        _bulk(api, "removeFromFolder", [{"cardId": card, "folderId": folder}])[0]["card"]["folderIds"] == []
    )
    gone = _bulk(api, "removeFromFolder", [{"cardId": card, "folderId": folder}])[0]
    assert (gone["status"], gone["error"]["code"]) == (404, "NOT_FOUND")
    _bulk(api, "archive", one)
    assert _extended(api, card)["isArchived"] is True
    assert _bulk(api, "unarchive", one)[0]["status"] == 200 and _extended(api, card)["isArchived"] is False
    assert _bulk(api, "trash", one)[0]["status"] == 200 and _extended(api, card)["isDeleted"] is True
    assert _bulk(api, "restore", one)[0]["status"] == 200 and _extended(api, card)["isDeleted"] is False
    refused = _bulk(api, "delete", one)[0]
    assert (refused["status"], refused["error"]["code"]) == (409, "CARD_NOT_IN_TRASH")
    _bulk(api, "trash", one)
    deleted = _bulk(api, "delete", one)[0]
    assert (deleted["status"], deleted["cardId"], deleted["card"], deleted["error"]) == (
        204,
        card,
        None,
        None,
    )
    assert api.get(f"/v1/cards/{card}").status_code == 404
    missing = _bulk(api, "update", [{"notes": "no card"}])[0]
    assert (missing["status"], missing["error"]["details"]["fields"][0]["field"]) == (400, "cardId")


def test_an_item_with_a_stale_if_match_fails_alone_and_its_card_stays(api: Api) -> None:
    """ifMatch per item: the current ETag passes (and its result has the new one), a stale one
    is that item's 412 with the current ETag, and `*` passes; on a folder's operation too."""
    (made, fresh_tag), (other, stale_tag) = settled_card(api, content="a"), settled_card(api, content="b")
    fresh, stale = made["id"], other["id"]
    folder = api.post("/v1/folders", json={"name": "F"}).json()["id"]
    tags = {fresh: fresh_tag, stale: stale_tag}
    moved = api.patch(f"/v1/cards/{stale}", json={"notes": "the other writer"}).headers["etag"]
    items = [
        {"cardId": fresh, "notes": "mine", "ifMatch": tags[fresh]},
        {"cardId": stale, "notes": "mine", "ifMatch": tags[stale]},
        {"cardId": "crd_missing", "notes": "mine", "ifMatch": "*"},
    ]
    results = _bulk(api, "update", items)
    assert [r["status"] for r in results] == [200, 412, 404]
    assert results[0]["etag"] == api.get(f"/v1/cards/{fresh}").headers["etag"] != tags[fresh]
    assert results[1]["error"]["code"] == "PRECONDITION_FAILED"
    assert results[1]["error"]["details"] == {"etag": moved} and results[1]["etag"] is None
    assert _extended(api, stale)["notes"] == "the other writer"
    assert _extended(api, fresh)["notes"] == "mine"
    filed = _bulk(
        api,
        "addToFolder",
        [
            {"cardId": fresh, "folderId": folder, "ifMatch": tags[fresh]},
            {"cardId": stale, "folderId": folder, "ifMatch": "*"},
        ],
    )
    assert [r["status"] for r in filed] == [412, 200]
    assert _extended(api, fresh)["folderIds"] == [] and _extended(api, stale)["folderIds"] == [folder]
    refused = _bulk(api, "create", [{"content": "c", "ifMatch": "*"}])[0]
    assert (refused["status"], refused["error"]["details"]["fields"][0]["field"]) == (400, "ifMatch")


def test_another_accounts_cards_look_missing_item_by_item(api: Api, make_api: Callable[[], Api]) -> None:
    other = make_api()
    theirs = other.create(content="theirs", tags=["t"])["id"]
    folder = other.post("/v1/folders", json={"name": "theirs"}).json()["id"]
    mine = api.create(content="mine")["id"]
    for operation, extra in [("favorite", {"isFavorited": True}), ("tag", {"tags": ["x"]}), ("trash", {})]:
        results = _bulk(api, operation, [{"cardId": theirs, **extra}, {"cardId": "crd_none", **extra}])
        assert [r["status"] for r in results] == [404, 404]
        first, second = (dict(r["error"], requestId=None) for r in results)
        assert first == second  # the same answer as an id that names no card
    into_theirs = _bulk(api, "addToFolder", [{"cardId": mine, "folderId": folder}])[0]
    assert (into_theirs["status"], into_theirs["error"]["code"]) == (404, "NOT_FOUND")
    assert other.get(f"/v1/cards/{theirs}").json()["tags"] == ["t"]


def test_atomic_leaves_nothing_changed_when_an_item_fails(api: Api, database: Database) -> None:
    card = api.create(content="x")["id"]
    items = [{"content": "new"}, {"content": "also new"}, {"content": "x" * 10, "cardType": "image"}]
    results = _bulk(api, "create", items, atomic=True)
    assert [r["status"] for r in results] == [424, 424, 400]
    assert [r["error"]["code"] for r in results] == ["NOT_APPLIED", "NOT_APPLIED", "FILE_REQUIRED"]
    assert results[0]["error"]["details"] == {"failedIndexes": [2]}
    assert all(r["card"] is None for r in results) and results[0]["cardId"] is None
    assert _cards(database, api.account_id) == 1
    trashed = _bulk(api, "trash", [{"cardId": card}, {"cardId": "crd_none"}], atomic=True)
    assert [r["status"] for r in trashed] == [424, 404] and trashed[0]["cardId"] == card
    assert _extended(api, card)["isDeleted"] is False
    applied = _bulk(api, "trash", [{"cardId": card}], atomic=True)
    assert applied[0]["status"] == 200 and _extended(api, card)["isDeleted"] is True


def test_a_replay_with_its_idempotency_key_answers_the_same_and_changes_nothing_more(
    api: Api, database: Database
) -> None:
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = {
        "operation": "create",
        "items": [{"content": f"c{i}"} for i in range(5)] + [{"cardType": "video"}],
    }
    first = api.post(BULK, json=body, headers=key)
    again = api.post(BULK, json=body, headers=key)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert [r["status"] for r in first.json()["results"]] == [200] * 5 + [400]
    assert _cards(database, api.account_id) == 5
    other = api.post(BULK, json={**body, "atomic": True}, headers=key)
    assert_error(other, 422, "IDEMPOTENCY_KEY_REUSED")


def test_the_changes_feed_sees_each_card_once(api: Api, database: Database) -> None:
    card = api.create(content="x")["id"]
    before = api.get("/v1/changes", params={"cursor": "latest"}).json()["pageInfo"]["nextCursor"]
    _bulk(api, "tag", [{"cardId": card, "tags": [f"t{i}"]} for i in range(5)])
    changes = api.get("/v1/changes", params={"cursor": before}).json()["items"]
    assert [c["id"] for c in changes if c["type"] == "card"] == [card]
    assert api.get(f"/v1/cards/{card}").json()["tags"] == [f"t{i}" for i in range(5)]
    with database.transaction(write=False) as session:
        rows = select(func.count()).select_from(Change).where(Change.account_id == api.account_id)
        assert session.scalar(rows.where(Change.kind == "card", Change.resource_id == card)) == 1


def _limited(tmp_path: Path, database: Database, **env: str) -> TestClient:
    settings = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_DATABASE_URL": database.engine.url.render_as_string(hide_password=False),
            "CARDVAULT_SECRET_KEY": "s" * 48,
            "CARDVAULT_VALIDATE_RESPONSES": "true",
            **env,
        }
    )
    return TestClient(create_app(settings, database), raise_server_exceptions=False)


def test_rate_limits_count_items(tmp_path: Path, database: Database) -> None:
    with _limited(tmp_path, database, CARDVAULT_RATE_LIMIT_CARDS="10/minute") as client:
        with database.transaction() as session:
            account = accounts.create_account(session, name=f"bulk-{time.time_ns()}")
            key = keys.issue_api_key(session, account_id=account.id)
        api = Api(client, key, account.id)
        made = api.post(BULK, json={"operation": "create", "items": [{"content": "x"}] * 8})
        assert made.status_code == 200 and made.headers["RateLimit"].startswith('"cards";r=2;')
        over = api.post(BULK, json={"operation": "create", "items": [{"content": "y"}] * 3})
        assert_error(over, 429, "RATE_LIMITED")
        assert _cards(database, account.id) == 8
        card = made.json()["results"][0]["cardId"]  # favorite's single operation is not limited
        assert _bulk(api, "favorite", [{"cardId": card, "isFavorited": True}] * 3)[0]["status"] == 200
        assert api.post("/v1/cards", json={}).status_code == 200  # the 9th and 10th remain
        assert api.post(BULK, json={"operation": "create", "items": [{}]}).status_code == 200
        assert_error(api.post("/v1/cards", json={}), 429, "RATE_LIMITED")


@pytest.mark.postgres
def test_a_connection_cut_mid_batch_leaves_nothing_and_its_retry_everything(
    database: Database, api: Api
) -> None:
    """The documented guarantee: the batch commits once, so a request cut short (here its
    connection, as a killed process or a failover would) leaves every applied item or none."""
    if database.dialect != "postgresql":
        pytest.skip("connections_cut needs PostgreSQL")
    items = [{"content": f"cut {i}"} for i in range(100)]
    with connections_cut(database, table="cards", times=ATTEMPTS, when="NEW.content = 'cut 50'"):
        assert_error(api.post(BULK, json={"operation": "create", "items": items}), 503, "SERVICE_UNAVAILABLE")
    assert _cards(database, api.account_id) == 0  # not the 50 before the cut
    with connections_cut(database, table="cards", times=1, when="NEW.content = 'cut 50'"):
        results = _bulk(api, "create", items)  # retried once, from the start
    assert {r["status"] for r in results} == {200}
    assert _cards(database, api.account_id) == 100
    # New contents: the trigger must match only this request's rows, not an UPDATE of the
    # cards above (their processing raises their version meanwhile).
    again = [{"content": f"again {i}"} for i in range(100)]
    with connections_cut(database, table="cards", times=1, at_commit=True, when="NEW.content = 'again 99'"):
        cut = api.post(BULK, json={"operation": "create", "items": again})
    assert_error(cut, 503, "SERVICE_UNAVAILABLE")  # lost in COMMIT: it says it may be saved
    assert _cards(database, api.account_id) == 100  # none of it (all or none, never a part)
