"""Hardening: inputs that once stalled a process, answered 500 or slipped past the contract,
each pinned by the behaviour that was wrong."""

from __future__ import annotations

import json

import pytest

from cardvault.settings import spec_document
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_folders import folder

SPEC = spec_document()[1]
DONE_FIELDS = {"completedAt", "isHidden", "linkCategory", "sourceTitle", "sourceUrl"}


def fields(body: dict) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(f["field"], f["message"]) for f in body["details"]["fields"]]


class TestCostlyValidationIsSkippedPastABound:
    def test_a_name_over_its_length_is_not_also_matched_against_the_pattern(self, api: Api) -> None:
        body = assert_error(
            api.post("/v1/folders", json={"name": "a" * 32000 + "\u0001"}), 400, "INVALID_INPUT"
        )
        assert fields(body) == [("name", "must be at most 300 characters")]

    def test_an_oversized_array_is_neither_walked_nor_checked_for_duplicates(self, api: Api) -> None:
        made = folder(api)
        ids = [{"a": i} for i in range(2000)]
        response = api.post(f"/v1/folders/{made['id']}/cards", json={"cardIds": ids})
        assert fields(assert_error(response, 400, "INVALID_INPUT")) == [
            ("cardIds", "must have at most 100 items")
        ]

    def test_an_id_given_twice_counts_once(self, api: Api) -> None:
        made = folder(api)
        card = api.post("/v1/cards", json={"content": "c"}).json()["cardId"]
        response = api.post(f"/v1/folders/{made['id']}/cards", json={"cardIds": [card, "a", card, "a"]})
        assert response.status_code == 200, response.text
        assert response.json() == {"updatedIds": [card], "failedIds": ["a"], "folderLimitIds": []}


class TestBodies:
    @pytest.mark.parametrize("depth", [33, 320, 950, 100_000])
    def test_deep_nesting_is_a_400(self, api: Api, depth: int) -> None:
        raw = b'{"tags": ' + b"[" * depth + b"]" * depth + b"}"
        response = api.post("/v1/cards", content=raw, headers={"Content-Type": "application/json"})
        assert "nested deeper than 32" in assert_error(response, 400, "INVALID_INPUT")["error"]

    def test_nesting_up_to_the_bound_reaches_the_schema(self, api: Api) -> None:
        raw = b'{"tags": ' + b"[" * 31 + b"]" * 31 + b"}"
        response = api.post("/v1/cards", content=raw, headers={"Content-Type": "application/json"})
        assert "nested" not in assert_error(response, 400, "INVALID_TAG")["error"]

    @pytest.mark.parametrize(
        "media_type",
        [
            "APPLICATION/JSON",
            "Application/Json; charset=UTF-8",
            "application/json;CHARSET=utf-8",
        ],
    )
    def test_media_types_compare_ignoring_case(self, api: Api, media_type: str) -> None:
        raw = json.dumps({"content": "cased"}).encode()
        response = api.post("/v1/cards", content=raw, headers={"Content-Type": media_type})
        assert response.status_code == 200 and response.json()["card"]["content"] == "cased"

    @pytest.mark.parametrize(
        "media_type", ["application/json; charset=latin-1", "application/json;charset=utf-16"]
    )
    def test_a_charset_other_than_utf8_is_415(self, api: Api, media_type: str) -> None:
        response = api.post("/v1/cards", content=b'{"content": "x"}', headers={"Content-Type": media_type})
        assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
        assert api.get("/v1/cards", params={"include": "total"}).json()["total"] == 0

    def test_a_large_body_is_validated_like_a_small_one(self, api: Api) -> None:
        body = {"content": "x" * 100_000, "notes": 7}
        response = api.post("/v1/cards", json=body)
        assert fields(assert_error(response, 400, "INVALID_INPUT")) == [("notes", "must be of type string")]


class TestQueryParameters:
    @pytest.mark.parametrize("raw", ["1_0", "５", "٥", " 5", "+5", "5 ", "1e1", "0x10", "1.0", "05", ""])
    def test_integers_are_ascii_digits_only(self, api: Api, raw: str) -> None:
        body = assert_error(api.get("/v1/cards", params={"limit": raw}), 400, "INVALID_INPUT")
        assert fields(body) == [("limit", "must be an integer written in ASCII digits")]

    @pytest.mark.parametrize("raw", ["True", "1", "yes", "TRUE", " true"])
    def test_booleans_are_true_or_false_only(self, api: Api, raw: str) -> None:
        body = assert_error(api.get("/v1/cards", params={"favorited": raw}), 400, "INVALID_INPUT")
        assert fields(body) == [("favorited", "must be true or false")]

    def test_a_repeated_parameter_is_refused(self, api: Api) -> None:
        body = assert_error(api.get("/v1/cards?tag=a&tag=b"), 400, "INVALID_INPUT")
        assert fields(body) == [("tag", "must be given at most once")]

    def test_well_formed_values_still_work(self, api: Api) -> None:
        api.create(content="x")
        params = {"limit": "1", "favorited": "false", "createdAfter": "0", "include": "total"}
        assert api.get("/v1/cards", params=params).json()["total"] == 1


class TestRequestHead:
    def test_two_authorization_headers_are_ambiguous(self, api: Api) -> None:
        response = api.client.get(
            "/v1/cards",
            headers=[("Authorization", api.headers["Authorization"]), ("Authorization", "Bearer x")],
        )
        body = assert_error(response, 400, "INVALID_INPUT")
        assert fields(body) == [("Authorization", "must be sent once")]
        assert 'error="invalid_request"' in response.headers["www-authenticate"]

    def test_headers_over_16_kib_are_431(self, api: Api) -> None:
        response = api.get("/v1/cards", headers={"X-Pad": "a" * 16_500})
        assert assert_error(response, 431, "HEADERS_TOO_LARGE")["details"] == {"limitBytes": 16384}

    @pytest.mark.parametrize("path", ["/v1/cards/", "/v1/folders/", "/v1/health/", "/v1/cards/x/"])
    def test_a_trailing_slash_is_a_404_never_a_redirect(self, api: Api, path: str) -> None:
        response = api.get(path, headers={"Host": "evil.example"}, follow_redirects=False)
        assert_error(response, 404, "NOT_FOUND")


class TestCardIdsInFolders:
    @pytest.mark.parametrize("method", ["POST", "DELETE"])
    def test_a_malformed_id_fails_alone(self, api: Api, method: str) -> None:
        made, card = folder(api), api.create(content="x")
        bad = ["x" * 65, "has space", "", "crd_" + "é" * 10, "y" * 1024]
        if method == "DELETE":
            api.post(f"/v1/folders/{made['id']}/cards", json={"cardIds": [card["id"]]})
        response = api.request(
            method, f"/v1/folders/{made['id']}/cards", json={"cardIds": [*bad, card["id"]]}
        )
        assert response.status_code == 200, response.text
        assert response.json() == {"updatedIds": [card["id"]], "failedIds": bad, "folderLimitIds": []}


class TestFolderPaging:
    def test_renaming_the_folder_at_the_boundary_does_not_move_the_next_page(self, api: Api) -> None:
        a, b, c = folder(api, "a"), folder(api, "b"), folder(api, "c")
        first = api.get("/v1/folders", params={"limit": 1}).json()
        api.patch(f"/v1/folders/{a['id']}", json={"name": "z"})
        rest = api.get("/v1/folders", params={"cursor": first["pageInfo"]["nextCursor"]}).json()
        assert [f["id"] for f in rest["items"]] == [b["id"], c["id"], a["id"]]

    def test_deleting_the_folder_at_the_boundary_does_not_break_the_cursor(self, api: Api) -> None:
        a, b = folder(api, "a"), folder(api, "b")
        first = api.get("/v1/folders", params={"limit": 1}).json()
        assert api.request("DELETE", f"/v1/folders/{a['id']}").status_code == 204
        rest = api.get("/v1/folders", params={"cursor": first["pageInfo"]["nextCursor"]}).json()
        assert [f["id"] for f in rest["items"]] == [b["id"]]

    def test_the_longest_possible_cursor_fits_the_spec(self, api: Api) -> None:
        # U+1D160 decomposes to three 4-byte characters: the largest sort key per character.
        longest = folder(api, "\U0001d160" * 300)
        other = folder(api, "\U0001d160" * 299 + "\U0001d161")
        first = api.get("/v1/folders", params={"limit": 1}).json()
        cursor = first["pageInfo"]["nextCursor"]
        (spec_cursor,) = [p for p in SPEC["paths"]["/folders"]["get"]["parameters"] if p["name"] == "cursor"]
        assert len(cursor) <= spec_cursor["schema"]["maxLength"]
        rest = api.get("/v1/folders", params={"cursor": cursor}).json()
        assert [f["id"] for f in first["items"] + rest["items"]] == sorted(
            [longest["id"], other["id"]], key=[longest["id"], other["id"]].index
        ) or len(first["items"] + rest["items"]) == 2


class TestDoneFieldsBelongToMarkDone:
    def test_only_mark_done_returns_the_done_fields(self, api: Api) -> None:
        card = api.create(content="https://example.com/a")
        done = api.post(f"/v1/cards/{card['id']}/done").json()
        assert set(done) >= DONE_FIELDS and done["completedAt"] is not None
        for action in ("archive", "unarchive", "trash", "restore"):
            body = api.post(f"/v1/cards/{card['id']}/{action}").json()
            assert "isDeleted" in body and not DONE_FIELDS & set(body), action


def test_more_than_32_query_parameters_are_refused_before_they_are_parsed(api: Api) -> None:
    query = "&".join(f"x{i}=1" for i in range(1_000))
    body = assert_error(api.get(f"/v1/cards?{query}"), 400, "INVALID_INPUT")
    assert "at most 32 query parameters" in body["error"]


def test_a_repeated_name_in_a_json_object_is_refused(api: Api) -> None:
    raw = b'{"content": "first", "content": "second"}'
    response = api.post("/v1/cards", content=raw, headers={"Content-Type": "application/json"})
    assert "repeats a name" in assert_error(response, 400, "INVALID_INPUT")["error"]
    assert api.get("/v1/cards", params={"include": "total"}).json()["total"] == 0


@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate"])
def test_a_compressed_body_is_415(api: Api, encoding: str) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    assert_error(
        api.post("/v1/cards", content=b'{"content": "x"}', headers=headers), 415, "UNSUPPORTED_MEDIA_TYPE"
    )
    assert api.get("/v1/cards", params={"include": "total"}).json()["total"] == 0


def test_two_content_lengths_are_refused(api: Api) -> None:
    headers = [*api.headers.items(), ("Content-Type", "application/json"), ("Content-Length", "16")]
    response = api.client.post(
        "/v1/cards", content=b'{"content": "x"}', headers=[*headers, ("Content-Length", "16")]
    )
    assert_error(response, 400, "INVALID_INPUT")
