"""Shares, feed subscriptions and smart folders in the changes feed (issue 47): shares and
subscriptions only to a reader whose types name them, as their GET shows them (a share never
with its token), with tombstones (also when a share's folder is deleted or its card deleted
forever); a subscription's poll is a change only when it moved entriesSaved or lastError; a
smart folder's query change is a folder change, its matches the cards' own changes; another
account's feed shows none of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from cardvault.domain import subscriptions
from cardvault.domain.db import Database
from tests.conftest import Api
from tests.unit.handlers.test_annotations_sync import changes, latest
from tests.unit.handlers.test_shares import make_folder, share
from tests.unit.handlers.test_subscriptions import follow

EVERY = ["card", "folder", "tag", "tagOperation", "export", "annotation", "share", "subscription"]


def told(items: list[dict[str, Any]], kind: str | None = None) -> list[tuple[str, str, str]]:
    """The items' (type, id, action), of one type only when ``kind`` is given (a card's
    processing settles when it does, and is its own change)."""
    return [(i["type"], i["id"], i["action"]) for i in items if kind is None or i["type"] == kind]


class TestShares:
    def test_shares_reach_only_a_reader_that_names_them_with_tombstones(self, api: Api) -> None:
        card = api.create(content="shared text")
        cursor = latest(api)
        made = share(api, cardId=card["id"], title="Look")
        token = urlsplit(made["url"]).path.removeprefix("/s/")
        default = changes(api, cursor)
        # (The card's processing may be there: it settles when it does.)
        assert all(item["type"] != "share" and "share" not in item for item in default)
        answer = api.get("/v1/changes", params={"cursor": cursor, "types": "share"})
        assert token not in answer.text and "/s/" not in answer.text
        named = answer.json()["items"]
        assert told(named) == [("share", made["id"], "upsert")]
        assert named[0]["share"] == api.get(f"/v1/shares/{made['id']}").json()
        assert named[0]["card"] is None and named[0]["etag"] is None and "subscription" not in named[0]
        changed = api.patch(f"/v1/shares/{made['id']}", json={"title": "Look again", "includeNotes": True})
        assert changed.status_code == 200, changed.text
        again = changes(api, cursor, types=["share"])  # the feed holds its latest change
        assert told(again) == [("share", made["id"], "upsert")] and again[0]["share"]["title"] == "Look again"
        assert again[0]["sequence"] > named[0]["sequence"]
        assert api.request("DELETE", f"/v1/shares/{made['id']}").status_code == 204
        gone = changes(api, cursor, types=["share"])
        assert [(i["id"], i["action"], i["share"]) for i in gone] == [(made["id"], "delete", None)]

    def test_a_share_goes_with_its_folder_and_with_its_card_deleted_forever(self, api: Api) -> None:
        folder_id = make_folder(api)
        card = api.create(content="a card")
        of_folder, of_card = share(api, folderId=folder_id), share(api, cardId=card["id"])
        cursor = latest(api)
        assert api.request("DELETE", f"/v1/folders/{folder_id}").status_code == 204
        assert told(changes(api, cursor, types=["share"])) == [("share", of_folder["id"], "delete")]
        cursor = latest(api)
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        assert changes(api, cursor, types=["share"]) == []  # in Trash, the share is kept
        assert api.request("DELETE", f"/v1/cards/{card['id']}").status_code == 204
        assert told(changes(api, cursor, types=["share"])) == [("share", of_card["id"], "delete")]

    def test_a_purged_trash_leaves_its_cards_shares_tombstones(self, api: Api) -> None:
        card = api.create(content="a card")
        made = share(api, cardId=card["id"])
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        cursor = latest(api)
        assert api.request("DELETE", "/v1/trash").status_code in (200, 204)
        assert told(changes(api, cursor, types=["share"])) == [("share", made["id"], "delete")]


class TestSubscriptions:
    def test_requests_are_changes_with_tombstones(self, api: Api) -> None:
        folder_id = make_folder(api, "Blogs")
        cursor = latest(api)
        made = follow(api, tags=["Reading"], folderId=folder_id)
        assert all(item["type"] != "subscription" for item in changes(api, cursor))
        named = changes(api, cursor, types=["subscription"])
        assert told(named) == [("subscription", made["id"], "upsert")]
        assert named[0]["subscription"] == api.get(f"/v1/subscriptions/{made['id']}").json()
        assert "share" not in named[0] and named[0]["folder"] is None
        cursor = latest(api)
        assert api.request("DELETE", f"/v1/folders/{folder_id}").status_code == 204
        moved = changes(api, cursor, types=["subscription"])
        assert told(moved) == [("subscription", made["id"], "upsert")]
        assert moved[0]["subscription"]["folderId"] is None
        cursor = latest(api)
        assert api.patch(f"/v1/subscriptions/{made['id']}", json={"tags": ["Later"]}).status_code == 200
        retagged = changes(api, cursor, types=["subscription"])
        assert [i["subscription"]["tags"] for i in retagged] == [["Later"]]
        assert api.request("DELETE", f"/v1/subscriptions/{made['id']}").status_code == 204
        gone = changes(api, cursor, types=["subscription"])
        assert [(i["id"], i["action"], i["subscription"]) for i in gone] == [(made["id"], "delete", None)]

    def test_a_poll_is_a_change_only_when_it_moved_entries_saved_or_last_error(
        self, api: Api, database: Database
    ) -> None:
        made = follow(api)
        entries = [subscriptions.Entry("https://blog.example.com/1", "One", None)]

        def polled(apply: Callable[..., object], *args: object, **kwargs: object) -> list[dict[str, Any]]:
            cursor = latest(api)
            with database.transaction() as session:
                apply(session, made["id"], *args, **kwargs)
            return changes(api, cursor, types=["subscription"])

        saved = polled(subscriptions.save, entries, ttl_minutes=None, etag='"v1"', last_modified=None)
        assert told(saved) == [("subscription", made["id"], "upsert")]
        assert saved[0]["subscription"]["entriesSaved"] == 1
        # The same entries again (nothing new), a 304: the poll times move, nothing else.
        assert polled(subscriptions.save, entries, ttl_minutes=None, etag='"v2"', last_modified=None) == []
        assert polled(subscriptions.unchanged) == []
        failed = polled(subscriptions.failed, "NOT_A_FEED", "not a feed")
        assert [i["subscription"]["lastError"] for i in failed] == ["NOT_A_FEED"]
        assert polled(subscriptions.failed, "NOT_A_FEED", "still not one") == []  # failing as before
        other = polled(subscriptions.failed, "FETCH_FAILED", "another failure")
        assert [i["subscription"]["lastError"] for i in other] == ["FETCH_FAILED"]
        back = polled(subscriptions.unchanged)  # succeeded after failing: lastError cleared
        assert [i["subscription"]["lastError"] for i in back] == [None]
        shown = api.get(f"/v1/subscriptions/{made['id']}").json()
        assert shown["lastPolledAt"] is not None and shown["entriesSaved"] == 1


class TestSmartFolders:
    def test_its_query_is_a_folder_change_and_its_matches_the_cards_own(self, api: Api) -> None:
        cursor = latest(api)
        made = api.post("/v1/folders", json={"name": "Cats", "query": "cats"})
        assert made.status_code == 201, made.text
        folder = made.json()
        created = changes(api, cursor)
        assert told(created) == [("folder", folder["id"], "upsert")]
        assert created[0]["folder"]["kind"] == "smart" and created[0]["folder"]["query"] == "cats"
        cursor = latest(api)
        assert api.patch(f"/v1/folders/{folder['id']}", json={"query": "dogs"}).status_code == 200
        changed = changes(api, cursor)
        assert told(changed) == [("folder", folder["id"], "upsert")]
        assert changed[0]["folder"]["query"] == "dogs"
        assert changed[0]["etag"] == api.get(f"/v1/folders/{folder['id']}").headers["etag"]
        cursor = latest(api)
        card = api.create(content="all about dogs")  # a new match: the card's change alone
        matched = changes(api, cursor)
        assert {(t, i) for t, i, _ in told(matched)} == {("card", card["id"])}
        assert api.get(f"/v1/folders/{folder['id']}").json()["cardCount"] == 1
        cursor = latest(api)
        assert api.request("DELETE", f"/v1/folders/{folder['id']}").status_code == 204
        assert told(changes(api, cursor), "folder") == [("folder", folder["id"], "delete")]


def test_another_accounts_feed_shows_none_of_them(api: Api, make_api: Callable[[], Api]) -> None:
    other = make_api()
    mine, theirs = latest(api), latest(other)
    card = api.create(content="mine")
    share(api, cardId=card["id"])
    follow(api)
    api.post("/v1/folders", json={"name": "Mine", "query": "mine"})
    assert {item["type"] for item in changes(api, mine, types=EVERY)} == {
        "card",
        "share",
        "subscription",
        "folder",
    }
    assert changes(other, theirs, types=EVERY) == []
