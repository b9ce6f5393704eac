"""Conditional requests on cards (docs/conditional-requests.md): the ETag of every read and
write, 304 for a current If-None-Match, 412 PRECONDITION_FAILED for a stale If-Match on every
operation that declares it, and read-modify-write by many clients at once that loses nothing
with If-Match (and, as the control, loses edits without it)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import text

from cardvault.domain.db import lock_tags
from cardvault.spec import spec_document
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_exports import settled

SPEC = spec_document()[1]
_METHODS = ("get", "put", "post", "patch", "delete")


def settled_card(api: Api, **body: Any) -> tuple[dict[str, Any], str]:
    """A new card once its processing is done with (a stage settling raises its version), and
    its ETag then."""
    card = api.create(**({"content": "a card"} | body))
    settled(api, card["id"])
    return card, api.get(f"/v1/cards/{card['id']}").headers["etag"]


def declaring(parameter: str) -> set[str]:
    """The operations of the spec that declare this header parameter."""
    ref = f"#/components/parameters/{parameter}"
    return {
        operation["operationId"]
        for item in SPEC["paths"].values()
        for method in _METHODS
        if (operation := item.get(method)) is not None
        and any(p.get("$ref") == ref for p in operation.get("parameters", []))
    }


class TestIfNoneMatch:
    def test_304_with_the_current_etag_and_200_after_a_change(self, api: Api) -> None:
        card, etag = settled_card(api, tags=["a"])
        path = f"/v1/cards/{card['id']}"
        for read in (path, f"{path}/extended"):
            answer = api.get(read, headers={"If-None-Match": etag})
            assert (answer.status_code, answer.headers["etag"], answer.content) == (304, etag, b"")
        changed = api.patch(path, json={"tags": ["a", "b"]}, headers={"If-Match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag
        again = api.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 200 and again.json()["tags"] == ["a", "b"]
        assert again.headers["etag"] == changed.headers["etag"]
        assert api.get(path, headers={"If-None-Match": changed.headers["etag"]}).status_code == 304

    def test_weak_comparison_star_and_lists(self, api: Api) -> None:
        card, etag = settled_card(api)
        path = f"/v1/cards/{card['id']}"
        for value in (f"W/{etag}", "*", f'"0", {etag}'):
            assert api.get(path, headers={"If-None-Match": value}).status_code == 304, value
        assert api.get(path, headers={"If-None-Match": '"0"'}).status_code == 200

    def test_a_missing_or_foreign_card_is_404_whatever_the_header(self, make_api: Any) -> None:
        mine, theirs = make_api(), make_api()
        card, _ = settled_card(theirs)
        for path in ("/v1/cards/crd_missing", f"/v1/cards/{card['id']}"):
            assert_error(mine.get(path, headers={"If-None-Match": "*"}), 404, "NOT_FOUND")
            assert_error(mine.patch(path, json={"notes": "x"}, headers={"If-Match": "*"}), 404, "NOT_FOUND")


class TestIfMatch:
    def test_a_stale_if_match_is_412_and_the_card_is_as_the_other_writer_left_it(self, api: Api) -> None:
        card, etag = settled_card(api, tags=["start"])
        path = f"/v1/cards/{card['id']}"
        other = api.patch(path, json={"tags": ["other"]}, headers={"If-Match": etag})
        assert other.status_code == 200
        refused = assert_error(
            api.patch(path, json={"tags": ["mine"], "notes": "mine"}, headers={"If-Match": etag}),
            412,
            "PRECONDITION_FAILED",
        )
        assert refused["details"] == {"etag": other.headers["etag"]}
        now = api.get(path)
        assert (now.json()["tags"], now.json()["notes"]) == (["other"], None)
        assert now.headers["etag"] == other.headers["etag"]

    def test_star_passes_on_a_card_and_a_weak_tag_never_matches(self, api: Api) -> None:
        card, etag = settled_card(api)
        path = f"/v1/cards/{card['id']}"
        assert_error(
            api.patch(path, json={"notes": "w"}, headers={"If-Match": f"W/{etag}"}),
            412,
            "PRECONDITION_FAILED",
        )
        assert api.get(path).json()["notes"] is None
        assert api.patch(path, json={"notes": "s"}, headers={"If-Match": "*"}).status_code == 200
        listed = api.patch(
            path, json={"notes": "l"}, headers={"If-Match": f'"0", {api.get(path).headers["etag"]}'}
        )
        assert listed.status_code == 200 and listed.json()["notes"] == "l"

    def test_a_new_card_answers_its_first_version(self, api: Api) -> None:
        made = api.post("/v1/cards", json={"content": "new", "tags": ["a", "b"]})
        assert (made.status_code, made.headers["etag"]) == (200, '"1"')

    def test_every_write_raises_the_version_and_answers_it(self, api: Api) -> None:
        card, etag = settled_card(api, url="https://example.com/page")
        path = f"/v1/cards/{card['id']}"
        seen = {etag}
        for method, suffix, body in [
            ("PATCH", "", {"tags": ["x"]}),
            ("PATCH", "/favorite", {"isFavorited": True}),
            ("POST", "/done", None),
            ("POST", "/archive", None),
            ("POST", "/unarchive", None),
            ("POST", "/trash", None),
            ("POST", "/restore", None),
        ]:
            answer = api.request(method, path + suffix, json=body, headers={"If-Match": etag})
            assert answer.status_code == 200, (suffix, answer.text)
            etag = answer.headers["etag"]
            assert etag not in seen, suffix
            seen.add(etag)
            assert api.get(path).headers["etag"] == etag, suffix

    def test_every_operation_declaring_if_match_refuses_a_stale_one_and_changes_nothing(
        self, api: Api
    ) -> None:
        card, etag = settled_card(api, url="https://example.com/page")
        folder = api.post("/v1/folders", json={"name": "F"}).json()
        hook = api.post("/v1/webhooks", json={"url": "https://hooks.example.com/x", "events": ["*"]}).json()
        c, f, w = (
            f"/v1/cards/{card['id']}",
            f"/v1/folders/{folder['id']}",
            f"/v1/webhooks/{hook['webhook']['id']}",
        )
        upload = {"fileName": "a.png", "fileSize": 10, "mimeType": "image/png"}
        captions = {"fileName": "a.vtt", "fileSize": 10, "mimeType": "text/vtt"}
        table: dict[str, tuple[str, str, Any, str]] = {
            "updateCard": ("PATCH", c, {"notes": "x"}, c),
            "deleteCard": ("DELETE", c, None, c),
            "setCardFavorite": ("PATCH", f"{c}/favorite", {"isFavorited": True}, c),
            "markCardDone": ("POST", f"{c}/done", None, c),
            "refreshCard": ("POST", f"{c}/refresh", None, c),
            "trashCard": ("POST", f"{c}/trash", None, c),
            "restoreCard": ("POST", f"{c}/restore", None, c),
            "archiveCard": ("POST", f"{c}/archive", None, c),
            "unarchiveCard": ("POST", f"{c}/unarchive", None, c),
            "createCardThumbnailUpload": ("POST", f"{c}/thumbnail/upload", upload, c),
            "replaceCardThumbnail": ("PUT", f"{c}/thumbnail", {"fileKey": "upl_x"}, c),
            "resetCardThumbnail": ("DELETE", f"{c}/thumbnail", None, c),
            "createCardCaptionsUpload": ("POST", f"{c}/captions/upload", captions, c),
            "replaceCardCaptions": ("PUT", f"{c}/captions", {"fileKey": "upl_x"}, c),
            "deleteCardCaptions": ("DELETE", f"{c}/captions", None, c),
            "updateFolder": ("PATCH", f, {"name": "G"}, f),
            "deleteFolder": ("DELETE", f, None, f),
            "addFolderCards": ("POST", f"{f}/cards", {"cardIds": [card["id"]]}, f),
            "removeFolderCards": ("DELETE", f"{f}/cards", {"cardIds": [card["id"]]}, f),
            "updateWebhook": ("PATCH", w, {"description": "d"}, w),
            "deleteWebhook": ("DELETE", w, None, w),
            "rotateWebhookSecret": ("POST", f"{w}/rotate-secret", None, w),
            "testWebhook": ("POST", f"{w}/test", None, w),
        }
        assert declaring("IfMatch") == set(table)  # a new operation declaring it joins the table
        for operation, (method, path, body, read) in table.items():
            before = api.get(read)
            answer = api.request(method, path, json=body, headers={"If-Match": '"999999"'})
            refused = assert_error(answer, 412, "PRECONDITION_FAILED")
            assert refused["details"] == {"etag": before.headers["etag"]}, operation
            after = api.get(read)
            assert (after.headers["etag"], after.json()) == (before.headers["etag"], before.json()), operation
        assert etag == api.get(c).headers["etag"]

    def test_every_read_declaring_if_none_match_answers_304(self, api: Api) -> None:
        card, _ = settled_card(api)
        folder = api.post("/v1/folders", json={"name": "F"}).json()
        hook = api.post("/v1/webhooks", json={"url": "https://hooks.example.com/x", "events": ["*"]}).json()
        table = {
            "getCard": f"/v1/cards/{card['id']}",
            "getExtendedCard": f"/v1/cards/{card['id']}/extended",
            "getFolder": f"/v1/folders/{folder['id']}",
            "getWebhook": f"/v1/webhooks/{hook['webhook']['id']}",
        }
        assert declaring("IfNoneMatch") == set(table)
        for path in table.values():
            etag = api.get(path).headers["etag"]
            assert api.get(path, headers={"If-None-Match": etag}).status_code == 304, path


CLIENTS = 8


def _read_modify_write(api: Api, path: str, tag: str, start: threading.Barrier, *, conditional: bool) -> int:
    """Read the card, wait until every client has read it, then write its tags plus ``tag``;
    with If-Match, read again and retry on 412 (and on a busy database). Answer the 412s met."""
    refused, first = 0, True
    while True:
        read = api.get(path)
        if first:
            start.wait()
            first = False
        headers = {"If-Match": read.headers["etag"]} if conditional else {}
        answer = api.patch(path, json={"tags": [*read.json()["tags"], tag]}, headers=headers)
        if answer.status_code == 200:
            return refused
        assert answer.status_code in (412, 503), answer.text
        refused += answer.status_code == 412
        time.sleep(0.01)


def _eight_clients(api: Api, *, conditional: bool) -> tuple[list[str], int]:
    card, _ = settled_card(api, tags=["start"])
    path = f"/v1/cards/{card['id']}"
    start = threading.Barrier(CLIENTS)
    refused: list[int] = []
    threads = [
        threading.Thread(
            target=lambda n=n: refused.append(
                _read_modify_write(api, path, f"t{n}", start, conditional=conditional)
            )
        )
        for n in range(CLIENTS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(refused) == CLIENTS
    return api.get(path).json()["tags"], sum(refused)


@pytest.mark.postgres
def test_eight_clients_with_if_match_and_retry_keep_every_tag(api: Api) -> None:
    tags, refused = _eight_clients(api, conditional=True)
    assert sorted(tags) == sorted(["start", *(f"t{n}" for n in range(CLIENTS))])
    assert refused >= CLIENTS - 1  # every client but the first to write read a version that moved


@pytest.mark.postgres
def test_eight_clients_without_if_match_lose_tags(api: Api) -> None:
    tags, _ = _eight_clients(api, conditional=False)
    # Every client read the card before any wrote: each write replaced the others'.
    assert tags[0] == "start" and len(tags) == 2


@pytest.mark.postgres
def test_if_match_waits_for_a_tag_batch_without_holding_the_card(api: Api, database: Any) -> None:
    """The lock order: a write with If-Match that takes the account's tag lock takes it before
    the card, so while a tag batch holds that lock the request waits holding no card (the
    batch, which locks cards next, cannot deadlock with it)."""
    if database.dialect != "postgresql":
        pytest.skip("the tag lock is PostgreSQL's")
    card, etag = settled_card(api, tags=["a"])
    answers: list[int] = []
    with database.transaction() as batch:
        lock_tags(batch, account_id=api.account_id, exclusive=True)
        sent = threading.Thread(
            target=lambda: answers.append(
                api.post(f"/v1/cards/{card['id']}/trash", headers={"If-Match": etag}).status_code
            )
        )
        sent.start()
        while not _waiting_for_an_advisory_lock(database):
            time.sleep(0.05)
        held = text("SELECT id FROM cards WHERE id = :id FOR UPDATE NOWAIT")
        assert batch.execute(held, {"id": card["id"]}).scalar() == card["id"]  # not locked by the request
    sent.join()
    assert answers == [200]


def _waiting_for_an_advisory_lock(database: Any) -> bool:
    with database.engine.connect() as connection:
        waiting = text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return bool(connection.execute(waiting).scalar())
