"""Shares over HTTP: create (a card or a folder), list, get, change, revoke; what another account
can and cannot do; how a share's link answers once revoked, expired, trashed or deleted."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest

from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import Share
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def make_folder(api: Api, name: str = "Reading") -> str:
    response = api.post("/v1/folders", json={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def put_in(api: Api, folder_id: str, *card_ids: str) -> None:
    response = api.post(f"/v1/folders/{folder_id}/cards", json={"cardIds": list(card_ids)})
    assert response.status_code == 200 and response.json()["updatedIds"] == list(card_ids), response.text


def share(api: Api, **body: object) -> dict:  # type: ignore[type-arg]
    response = api.post("/v1/shares", json=body)
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/v1/shares/{response.json()['id']}"
    return response.json()  # type: ignore[no-any-return]


def path(url: str) -> str:
    return urlsplit(url).path


class TestCreateShare:
    def test_a_folder_share_answers_its_links_once(self, api: Api) -> None:
        folder_id = make_folder(api)
        made = share(api, folderId=folder_id, title="  My reading  ")
        assert (made["folderId"], made["cardId"], made["title"], made["includeNotes"]) == (
            folder_id,
            None,
            "My reading",
            False,
        )
        token = path(made["url"]).removeprefix("/s/")
        assert token.startswith("cvh_") and len(token) == 40
        assert made["feedUrl"] == made["url"] + "/feed.atom"
        assert made["jsonFeedUrl"] == made["url"] + "/feed.json"
        shown = api.get(f"/v1/shares/{made['id']}").json()
        assert "url" not in shown and token not in str(api.get("/v1/shares").json())

    def test_two_shares_have_different_tokens(self, api: Api) -> None:
        card = api.create(content="hello")
        assert share(api, cardId=card["id"])["url"] != share(api, cardId=card["id"])["url"]

    @pytest.mark.parametrize("body", [{}, {"cardId": "crd_x", "folderId": "fld_x"}, {"title": "x"}])
    def test_needs_exactly_one_of_card_and_folder(self, api: Api, body: dict) -> None:  # type: ignore[type-arg]
        assert_error(api.post("/v1/shares", json=body), 400, "INVALID_INPUT")

    def test_an_expiry_in_the_past_is_refused(self, api: Api) -> None:
        card = api.create(content="x")
        assert_error(
            api.post("/v1/shares", json={"cardId": card["id"], "expiresAt": 1000}), 400, "INVALID_INPUT"
        )

    def test_a_card_in_trash_cannot_be_shared(self, api: Api) -> None:
        card = api.create(content="x")
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        assert_error(api.post("/v1/shares", json={"cardId": card["id"]}), 409, "CARD_IN_TRASH")


class TestIsolation:
    def test_another_account_cannot_share_list_see_change_or_revoke(
        self, make_api: Callable[[], Api]
    ) -> None:
        owner, stranger = make_api(), make_api()
        card = owner.create(content="private")
        folder_id = make_folder(owner)
        assert_error(stranger.post("/v1/shares", json={"cardId": card["id"]}), 404, "NOT_FOUND")
        assert_error(stranger.post("/v1/shares", json={"folderId": folder_id}), 404, "NOT_FOUND")
        made = share(owner, cardId=card["id"])
        assert stranger.get("/v1/shares").json()["items"] == []
        assert_error(stranger.get(f"/v1/shares/{made['id']}"), 404, "NOT_FOUND")
        assert_error(stranger.patch(f"/v1/shares/{made['id']}", json={"title": "mine"}), 404, "NOT_FOUND")
        assert_error(stranger.request("DELETE", f"/v1/shares/{made['id']}"), 404, "NOT_FOUND")
        assert owner.get(f"/v1/shares/{made['id']}").json()["title"] is None
        assert owner.client.get(path(made["url"])).status_code == 200


class TestManageShares:
    def test_lists_newest_first_in_pages(self, api: Api) -> None:
        card = api.create(content="x")
        ids = [share(api, cardId=card["id"])["id"] for _ in range(3)]
        first = api.get("/v1/shares", params={"limit": 2}).json()
        assert [s["id"] for s in first["items"]] == ids[::-1][:2] and first["total"] == 3
        rest = api.get("/v1/shares", params={"cursor": first["pageInfo"]["nextCursor"]}).json()
        assert [s["id"] for s in rest["items"]] == [ids[0]] and not rest["pageInfo"]["hasMore"]

    def test_changes_title_notes_and_expiry(self, api: Api) -> None:
        card = api.create(content="x")
        made = share(api, cardId=card["id"], title="T", expiresAt=now_ms() + 60_000)
        changed = api.patch(
            f"/v1/shares/{made['id']}", json={"title": None, "includeNotes": True, "expiresAt": None}
        ).json()
        assert (changed["title"], changed["includeNotes"], changed["expiresAt"]) == (None, True, None)


class TestLinkStates:
    def test_a_revoked_share_answers_404_at_once(self, api: Api) -> None:
        made = share(api, cardId=api.create(content="x")["id"])
        assert api.client.get(path(made["url"])).status_code == 200
        assert api.request("DELETE", f"/v1/shares/{made['id']}").status_code == 204
        for url in (made["url"], made["feedUrl"], made["jsonFeedUrl"]):
            assert api.client.get(path(url)).status_code == 404
        assert_error(api.get(f"/v1/shares/{made['id']}"), 404, "NOT_FOUND")

    def test_a_trashed_card_answers_404_and_again_200_once_restored(self, api: Api) -> None:
        card = api.create(content="x")
        made = share(api, cardId=card["id"])
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        assert api.client.get(path(made["url"])).status_code == 404
        assert api.client.get(path(made["feedUrl"])).status_code == 404
        assert api.post(f"/v1/cards/{card['id']}/restore").status_code == 200
        assert api.client.get(path(made["url"])).status_code == 200

    def test_a_deleted_folder_answers_404(self, api: Api) -> None:
        folder_id = make_folder(api)
        made = share(api, folderId=folder_id)
        assert api.request("DELETE", f"/v1/folders/{folder_id}").status_code == 204
        assert api.client.get(path(made["url"])).status_code == 404
        assert_error(api.get(f"/v1/shares/{made['id']}"), 404, "NOT_FOUND")

    def test_an_expired_share_answers_410(self, api: Api, database: Database) -> None:
        made = share(api, cardId=api.create(content="x")["id"], expiresAt=now_ms() + 60_000)
        assert api.client.get(path(made["url"])).status_code == 200
        with database.transaction() as session:  # the time passes: the row says it has
            row = session.get(Share, made["id"])
            assert row is not None
            row.expires_at = now_ms() - 1
        for url in (made["url"], made["feedUrl"], made["jsonFeedUrl"]):
            answer = api.client.get(path(url))
            assert answer.status_code == 410 and "expired" in answer.text

    @pytest.mark.parametrize("token", ["cvh_" + "a" * 36, "nothing", "cvk_" + "b" * 36])
    def test_an_unknown_or_malformed_token_answers_404(self, api: Api, token: str) -> None:
        assert api.client.get(f"/s/{token}").status_code == 404
        assert api.client.get(f"/s/{token}/feed.atom").status_code == 404
