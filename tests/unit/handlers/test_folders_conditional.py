"""Conditional requests on folders: 304 while the folder is unchanged, a new ETag when its name
or its cards (cardCount) change, and 412 for a stale If-Match with nothing changed."""

from __future__ import annotations

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_folders import folder


def test_304_until_its_cards_change_then_200_with_the_new_count(api: Api) -> None:
    made = folder(api, "Reading")
    path = f"/v1/folders/{made['id']}"
    etag = api.get(path).headers["etag"]
    assert (api.get(path, headers={"If-None-Match": etag}).status_code, etag) == (304, etag)
    card = api.create(content="c")
    added = api.post(f"{path}/cards", json={"cardIds": [card["id"]]})
    assert added.status_code == 200 and added.headers["etag"] != etag
    now = api.get(path, headers={"If-None-Match": etag})
    assert (now.status_code, now.json()["cardCount"], now.headers["etag"]) == (200, 1, added.headers["etag"])


def test_a_stale_if_match_is_412_and_the_other_rename_stands(api: Api) -> None:
    made = folder(api, "A")
    path = f"/v1/folders/{made['id']}"
    etag = api.get(path).headers["etag"]
    renamed = api.patch(path, json={"name": "B"}, headers={"If-Match": etag})
    assert renamed.status_code == 200 and renamed.headers["etag"] != etag
    refused = assert_error(
        api.patch(path, json={"name": "C"}, headers={"If-Match": etag}), 412, "PRECONDITION_FAILED"
    )
    assert refused["details"] == {"etag": renamed.headers["etag"]}
    assert_error(api.request("DELETE", path, headers={"If-Match": etag}), 412, "PRECONDITION_FAILED")
    assert api.get(path).json()["name"] == "B"
    assert api.request("DELETE", path, headers={"If-Match": renamed.headers["etag"]}).status_code == 204


def test_a_card_going_to_trash_moves_its_folders_etag_without_a_write_to_them(api: Api) -> None:
    """The count alone moves (trash, restore): the ETag follows it, an If-Match read before the
    trash fails, and restoring the card brings back the representation and its ETag."""
    made = folder(api, "Kept")
    path = f"/v1/folders/{made['id']}"
    card = api.create(content="c")
    before = api.post(f"{path}/cards", json={"cardIds": [card["id"]]}).headers["etag"]
    api.post(f"/v1/cards/{card['id']}/trash")
    trashed = api.get(path, headers={"If-None-Match": before})
    assert (trashed.status_code, trashed.json()["cardCount"]) == (200, 0)
    assert trashed.headers["etag"] != before
    refused = assert_error(
        api.patch(path, json={"name": "Renamed"}, headers={"If-Match": before}), 412, "PRECONDITION_FAILED"
    )
    assert refused["details"] == {"etag": trashed.headers["etag"]}
    api.post(f"/v1/cards/{card['id']}/restore")
    assert api.get(path, headers={"If-None-Match": before}).status_code == 304
    renamed = api.patch(path, json={"name": "Renamed"}, headers={"If-Match": before})
    assert renamed.status_code == 200 and api.get(path).json()["name"] == "Renamed"
