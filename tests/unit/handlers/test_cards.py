"""Card operations over HTTP: statuses, bodies and error bodies, through the real app."""

from collections.abc import Callable
from typing import ClassVar

import pytest
from sqlalchemy import insert

from cardvault.domain.cards import listing
from cardvault.domain.db import Database
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card
from tests.conftest import Api

DONE_FIELDS = {"completedAt", "isHidden", "linkCategory", "sourceTitle", "sourceUrl"}


def assert_error(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"code", "error", "details", "requestId", "retryAt"}
    assert body["code"] == code and body["error"]
    assert body["requestId"] == response.headers["x-request-id"]
    return body  # type: ignore[no-any-return]


class TestCreateCard:
    def test_returns_the_created_card(self, api: Api) -> None:
        response = api.post("/v1/cards", json={"content": "hello", "notes": "n", "tags": ["A", "a"]})
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "created" and body["cardId"] == body["card"]["id"]
        assert body["appUrl"] == f"https://app.cardvault.test/cards/{body['cardId']}"
        card = body["card"]
        assert (card["type"], card["content"], card["notes"], card["tags"]) == ("text", "hello", "n", ["A"])
        assert card["isFavorited"] is False and card["aiTags"] == []
        assert card["createdAt"] == card["updatedAt"] and card["createdAt"] > 1_700_000_000_000

    @pytest.mark.parametrize(
        ("content", "expected"),
        [
            ("https://example.com", "link"),
            ('"Hi." — Me', "quote"),
            ("#fff teal", "palette"),
            ("notes", "text"),
        ],
    )
    def test_infers_the_type(self, api: Api, content: str, expected: str) -> None:
        assert api.create(content=content)["type"] == expected

    @pytest.mark.parametrize("card_type", ["text", "link", "palette", "quote"])
    def test_creates_every_type_that_needs_no_file(self, api: Api, card_type: str) -> None:
        assert api.create(cardType=card_type, content="x")["type"] == card_type

    def test_keeps_content_byte_for_byte(self, api: Api) -> None:
        content = "\r\n  *md*\u2028\t \U0001f600 e\u0301\n"
        card = api.create(content=content)
        assert api.get(f"/v1/cards/{card['id']}").json()["content"] == content

    def test_returns_413_one_byte_over_512_kib(self, api: Api) -> None:
        assert api.post("/v1/cards", json={"content": "x" * 524288}).status_code == 200
        body = assert_error(api.post("/v1/cards", json={"content": "x" * 524289}), 413, "CONTENT_TOO_LARGE")
        assert body["details"] == {"limitBytes": 524288, "actualBytes": 524289}

    def test_returns_400_invalid_tag_naming_it(self, api: Api) -> None:
        body = assert_error(api.post("/v1/cards", json={"tags": ["ok", "bad\u0007tag"]}), 400, "INVALID_TAG")
        assert body["details"]["tag"] == "bad\u0007tag"
        assert api.get("/v1/cards", params={"include": "total"}).json()["total"] == 0

    def test_returns_400_with_every_bad_field(self, api: Api) -> None:
        body = assert_error(
            api.post("/v1/cards", json={"content": 1, "cardType": "nope", "extra": True}),
            400,
            "INVALID_INPUT",
        )
        assert {f["field"] for f in body["details"]["fields"]} == {"content", "cardType", "extra"}

    def test_returns_404_for_an_unknown_file_key(self, api: Api) -> None:
        assert_error(
            api.post("/v1/cards", json={"fileKey": "up_123", "fileName": "a.pdf"}), 404, "UPLOAD_NOT_FOUND"
        )

    @pytest.mark.parametrize(
        "raw",
        [
            b"{",
            b"\xff\xfe{}",
            b"[]",
            b'{"content": NaN}',
            b'"text"',
            b"[" * 100000,
            b'{"content": "\\ud800"}',
        ],
    )
    def test_returns_400_for_a_body_that_is_not_a_json_object(self, api: Api, raw: bytes) -> None:
        response = api.post("/v1/cards", content=raw, headers={"Content-Type": "application/json"})
        assert_error(response, 400, "INVALID_INPUT")

    def test_returns_400_for_a_missing_body(self, api: Api) -> None:
        assert_error(
            api.post("/v1/cards", headers={"Content-Type": "application/json"}), 400, "INVALID_INPUT"
        )

    def test_returns_415_for_a_body_that_is_not_json(self, api: Api) -> None:
        assert_error(
            api.post("/v1/cards", content=b"x", headers={"Content-Type": "text/plain"}),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        )

    def test_returns_413_for_a_body_over_4_mib(self, api: Api) -> None:
        response = api.post(
            "/v1/cards", content=b" " * (4 * 1024 * 1024 + 1), headers={"Content-Type": "application/json"}
        )
        assert_error(response, 413, "CONTENT_TOO_LARGE")


class TestGetCard:
    def test_returns_the_card_with_every_field(self, api: Api) -> None:
        created = api.create(content="x", url="https://example.com")
        response = api.get(f"/v1/cards/{created['id']}")
        assert response.status_code == 200 and response.json() == created

    def test_returns_404_for_a_missing_card(self, api: Api) -> None:
        assert_error(api.get("/v1/cards/crd_missing"), 404, "NOT_FOUND")

    def test_a_palettes_extended_card_names_its_colours_as_written(self, api: Api) -> None:
        created = api.create(content="#F00, navy; #0a78c8 #ff0000 #abcd")
        assert created["type"] == "palette"
        extended = api.get(f"/v1/cards/{created['id']}/extended").json()
        assert extended["colors"] == [
            {"hex": "#ff0000", "name": "red"},
            {"hex": "#000080", "name": "navy"},
            {"hex": "#0a78c8", "name": "cornflowerblue"},  # the nearest CSS colour
            {"hex": "#aabbcc", "name": "lightsteelblue"},
        ]
        assert extended["aiEngine"] is None
        text = api.create(content="#F00 is red")
        assert api.get(f"/v1/cards/{text['id']}/extended").json()["colors"] == []

    def test_returns_400_for_a_malformed_id(self, api: Api) -> None:
        assert_error(api.get("/v1/cards/bad%20id"), 400, "INVALID_INPUT")


class TestUpdateCard:
    def test_updates_the_given_fields(self, api: Api) -> None:
        card = api.create(content="a", notes="n", tags=["t"])
        response = api.patch(
            f"/v1/cards/{card['id']}",
            json={"content": "b", "notes": None, "tags": [], "url": "https://x.example"},
        )
        assert response.status_code == 200
        body = response.json()
        assert (body["content"], body["notes"], body["tags"], body["url"]) == (
            "b",
            None,
            [],
            "https://x.example",
        )
        assert body["type"] == "text"

    def test_an_empty_object_changes_nothing(self, api: Api) -> None:
        card = api.create(content="a")
        assert api.patch(f"/v1/cards/{card['id']}", json={}).json() == card

    def test_returns_413_and_changes_nothing(self, api: Api) -> None:
        card = api.create(content="a")
        assert_error(
            api.patch(f"/v1/cards/{card['id']}", json={"content": "é" * 262145}), 413, "CONTENT_TOO_LARGE"
        )
        assert api.get(f"/v1/cards/{card['id']}").json() == card

    def test_returns_400_for_a_bad_tag_or_url(self, api: Api) -> None:
        card = api.create(content="a")
        assert_error(api.patch(f"/v1/cards/{card['id']}", json={"tags": [" "]}), 400, "INVALID_TAG")
        assert_error(
            api.patch(f"/v1/cards/{card['id']}", json={"url": "javascript:alert(1)"}), 400, "INVALID_INPUT"
        )
        assert_error(api.patch(f"/v1/cards/{card['id']}", json={"type": "link"}), 400, "INVALID_INPUT")

    def test_returns_404_for_a_missing_card(self, api: Api) -> None:
        assert_error(api.patch("/v1/cards/crd_missing", json={"content": "x"}), 404, "NOT_FOUND")


class TestSetCardFavorite:
    def test_sets_and_clears_the_flag(self, api: Api) -> None:
        card = api.create(content="a")
        on = api.patch(f"/v1/cards/{card['id']}/favorite", json={"isFavorited": True})
        assert on.status_code == 200 and on.json()["isFavorited"] is True
        off = api.patch(f"/v1/cards/{card['id']}/favorite", json={"isFavorited": False})
        assert off.json()["isFavorited"] is False

    def test_returns_400_without_the_flag(self, api: Api) -> None:
        card = api.create(content="a")
        body = assert_error(api.patch(f"/v1/cards/{card['id']}/favorite", json={}), 400, "INVALID_INPUT")
        assert body["details"]["fields"] == [
            {"location": "body", "field": "isFavorited", "message": "is required"}
        ]
        assert_error(
            api.patch(f"/v1/cards/{card['id']}/favorite", json={"isFavorited": "yes"}), 400, "INVALID_INPUT"
        )

    def test_returns_404_for_a_missing_card(self, api: Api) -> None:
        assert_error(
            api.patch("/v1/cards/crd_missing/favorite", json={"isFavorited": True}), 404, "NOT_FOUND"
        )


class TestMarkCardDone:
    def test_sets_completed_at_once_and_returns_the_extended_card(self, api: Api) -> None:
        card = api.create(content="https://example.com/read-me")
        first = api.post(f"/v1/cards/{card['id']}/done")
        assert first.status_code == 200
        body = first.json()
        assert body["completedAt"] >= card["createdAt"] and body["isDeleted"] is False
        assert body["folderIds"] == [] and body["thumbnailOverridden"] is False
        second = api.post(f"/v1/cards/{card['id']}/done")
        assert second.status_code == 200 and second.json()["completedAt"] == body["completedAt"]

    def test_returns_400_type_mismatch_for_other_types(self, api: Api) -> None:
        card = api.create(content="plain")
        assert_error(api.post(f"/v1/cards/{card['id']}/done"), 400, "TYPE_MISMATCH")
        assert "completedAt" not in api.get(f"/v1/cards/{card['id']}").json()

    def test_returns_404_for_a_missing_card(self, api: Api) -> None:
        assert_error(api.post("/v1/cards/crd_missing/done"), 404, "NOT_FOUND")


class TestListCards:
    def test_counts_only_when_asked(self, api: Api) -> None:
        api.create(content="x")
        body = api.get("/v1/cards", params={"include": "content"}).json()
        assert "total" not in body and "totalCapped" not in body and len(body["items"]) == 1
        trash = api.get("/v1/trash").json()
        assert "total" not in trash and "totalCapped" not in trash

    def test_a_total_is_counted_up_to_ten_thousand(self, api: Api, database: Database) -> None:
        rows = [
            {
                "id": new_id("crd"),
                "account_id": api.account_id,
                "type": "text",
                "content": "",
                "is_favorited": False,
                "created_at": 1,
                "updated_at": 1,
            }
            for _ in range(listing.TOTAL_CAP + 1)
        ]
        with database.transaction() as session:
            session.execute(insert(Card), rows)
        body = api.get("/v1/cards", params={"include": "total", "limit": 1}).json()
        assert (body["total"], body["totalCapped"]) == (10_000, True)
        api.post(f"/v1/cards/{body['items'][0]['id']}/trash")
        body = api.get("/v1/cards", params={"include": "total", "limit": 1}).json()
        assert (body["total"], body["totalCapped"]) == (10_000, False)
        trash = api.get("/v1/trash", params={"include": "total"}).json()
        assert (trash["total"], trash["totalCapped"]) == (1, False)

    def test_lists_newest_first_with_page_info_and_total(self, api: Api) -> None:
        ids = [api.create(content=f"c{i}")["id"] for i in range(3)]
        body = api.get("/v1/cards", params={"limit": 2, "include": "total"}).json()
        assert [i["id"] for i in body["items"]] == ids[:0:-1]
        assert (body["total"], body["totalCapped"], body["pageInfo"]["hasMore"]) == (3, False, True)
        rest = api.get("/v1/cards", params={"limit": 2, "cursor": body["pageInfo"]["nextCursor"]}).json()
        assert [i["id"] for i in rest["items"]] == [ids[0]]
        assert rest["pageInfo"] == {"hasMore": False, "nextCursor": None}

    def test_include_adds_field_groups(self, api: Api) -> None:
        api.create(content="body", notes="n")
        plain = api.get("/v1/cards").json()["items"][0]
        assert "content" not in plain and "metadataTitle" not in plain and "processingStatus" not in plain
        full = api.get("/v1/cards", params={"include": "content,metadata,processing"}).json()["items"][0]
        assert (full["content"], full["notes"], full["metadataTitle"]) == ("body", "n", None)
        assert [stage["name"] for stage in full["processingStatus"]["stages"]] == ["ai"]

    def test_filters_combine(self, api: Api) -> None:
        link = api.create(url="https://example.com/jazz", tags=["Music"])
        api.create(content="jazz notes", tags=["music"])
        api.patch(f"/v1/cards/{link['id']}/favorite", json={"isFavorited": True})
        params = {"q": "jaz", "tag": "MUSIC", "type": "link", "favorited": "true", "sort": "oldest"}
        assert [i["id"] for i in api.get("/v1/cards", params=params).json()["items"]] == [link["id"]]

    @pytest.mark.parametrize(
        "params",
        [
            {"limit": 0},
            {"limit": 101},
            {"limit": "x"},
            {"sort": "up"},
            {"type": "gif"},
            {"favorited": "maybe"},
            {"createdAfter": -1},
            {"include": "content,nope"},
            {"cursor": "!"},
            {"unknown": "1"},
        ],
    )
    def test_returns_400_for_bad_parameters(self, api: Api, params: dict) -> None:  # type: ignore[type-arg]
        body = assert_error(api.get("/v1/cards", params=params), 400, "INVALID_INPUT")
        assert body["details"]["fields"][0]["location"] == "query"

    def test_returns_400_invalid_cursor_for_a_tampered_cursor(self, api: Api) -> None:
        for i in range(2):
            api.create(content=f"c{i}")
        cursor = api.get("/v1/cards", params={"limit": 1}).json()["pageInfo"]["nextCursor"]
        assert_error(
            api.get("/v1/cards", params={"limit": 1, "cursor": cursor[:-2] + "xx"}), 400, "INVALID_CURSOR"
        )
        assert_error(api.get("/v1/cards", params={"cursor": cursor, "sort": "oldest"}), 400, "INVALID_CURSOR")


class TestIsolation:
    """Another account's card answers exactly like a missing one, on every operation."""

    OPERATIONS: ClassVar = [
        ("GET", "/v1/cards/{id}", None),
        ("PATCH", "/v1/cards/{id}", {"content": "stolen"}),
        ("PATCH", "/v1/cards/{id}/favorite", {"isFavorited": True}),
        ("POST", "/v1/cards/{id}/done", None),
    ]

    @pytest.mark.parametrize(("method", "path", "body"), OPERATIONS)
    def test_another_accounts_card_answers_like_a_missing_one(
        self,
        make_api: Callable[[], Api],
        method: str,
        path: str,
        body: dict | None,  # type: ignore[type-arg]
    ) -> None:
        owner, intruder = make_api(), make_api()
        card = owner.create(content="https://example.com/private")
        foreign = intruder.request(method, path.format(id=card["id"]), json=body)
        missing = intruder.request(method, path.format(id="crd_doesnotexist"), json=body)
        assert_error(foreign, 404, "NOT_FOUND")
        strip = lambda r: {k: v for k, v in r.json().items() if k != "requestId"}  # noqa: E731
        assert strip(foreign) == strip(missing)
        assert owner.get(f"/v1/cards/{card['id']}").json() == card

    def test_lists_and_search_show_only_the_accounts_cards(self, make_api: Callable[[], Api]) -> None:
        owner, other = make_api(), make_api()
        owner.create(content="secret word", tags=["private"])
        assert other.get("/v1/cards", params={"include": "total"}).json()["total"] == 0
        assert other.get("/v1/cards", params={"q": "secret"}).json()["items"] == []
        assert other.get("/v1/cards", params={"tag": "private"}).json()["items"] == []


# Hardening: a response that once slipped past the contract, pinned by the behaviour that was
# wrong.
class TestDoneFieldsBelongToMarkDone:
    def test_only_mark_done_returns_the_done_fields(self, api: Api) -> None:
        card = api.create(content="https://example.com/a")
        done = api.post(f"/v1/cards/{card['id']}/done").json()
        assert set(done) >= DONE_FIELDS and done["completedAt"] is not None
        for action in ("archive", "unarchive", "trash", "restore"):
            body = api.post(f"/v1/cards/{card['id']}/{action}").json()
            assert "isDeleted" in body and not DONE_FIELDS & set(body), action


class TestListCardsByUrl:
    """``url``: a browser extension asks whether a page is saved, in any spelling of its URL."""

    def test_finds_the_cards_of_the_same_page_in_any_spelling(self, api: Api) -> None:
        saved = api.create(content="https://Example.com:443/post?utm_source=feed&id=7#comments")
        other_page = api.create(content="https://example.com/post?id=8")
        api.create(content="http://example.com/post?id=7")  # http and https stay apart
        for spelling in (
            "https://example.com/post?id=7",
            "HTTPS://EXAMPLE.COM/post?fbclid=abc&id=7",
            "https://example.com./post?id=7#top",
        ):
            items = api.get("/v1/cards", params={"url": spelling}).json()["items"]
            assert [item["id"] for item in items] == [saved["id"]], spelling
        items = api.get("/v1/cards", params={"url": "https://example.com/post?id=9"}).json()["items"]
        assert items == []
        api.patch(f"/v1/cards/{other_page['id']}", json={"url": "https://example.com/post?id=9"})
        items = api.get("/v1/cards", params={"url": "https://example.com/post?id=9"}).json()["items"]
        assert [item["id"] for item in items] == [other_page["id"]]

    def test_combines_with_the_other_filters(self, api: Api) -> None:
        card = api.create(content="https://example.com/archived")
        api.post(f"/v1/cards/{card['id']}/archive")
        params = {"url": "https://example.com/archived"}
        assert api.get("/v1/cards", params=params).json()["items"] == []
        found = api.get("/v1/cards", params={**params, "archived": "include", "include": "total"}).json()
        assert [item["id"] for item in found["items"]] == [card["id"]] and found["total"] == 1

    def test_another_accounts_card_is_not_found(self, api: Api, make_api: Callable[[], Api]) -> None:
        api.create(content="https://example.com/mine")
        assert make_api().get("/v1/cards", params={"url": "https://example.com/mine"}).json()["items"] == []

    @pytest.mark.parametrize("url", ["ftp://example.com/a", "example.com/a", "https://example.com/a b"])
    def test_returns_400_for_what_is_no_http_url(self, api: Api, url: str) -> None:
        body = assert_error(api.get("/v1/cards", params={"url": url}), 400, "INVALID_INPUT")
        assert body["details"]["fields"][0]["field"] == "url"

    def test_returns_400_for_a_url_without_a_normal_form(self, api: Api) -> None:
        body = assert_error(
            api.get("/v1/cards", params={"url": "https://example.com:99999/a"}), 400, "INVALID_INPUT"
        )
        assert body["details"]["fields"][0]["field"] == "url"
