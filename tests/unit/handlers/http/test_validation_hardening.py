"""Hardening: inputs that once stalled a process, answered 500 or slipped past the contract,
each pinned by the behaviour that was wrong; here, what the request validation
(cardvault.handlers.http.validation) checks of bodies and query parameters."""

from __future__ import annotations

import pytest

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_folders import folder


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
        body = assert_error(api.get("/v1/cards?sort=newest&sort=oldest"), 400, "INVALID_INPUT")
        assert fields(body) == [("sort", "must be given at most once")]  # tag, type, folder repeat

    def test_well_formed_values_still_work(self, api: Api) -> None:
        api.create(content="x")
        params = {"limit": "1", "favorited": "false", "createdAfter": "0", "include": "total"}
        assert api.get("/v1/cards", params=params).json()["total"] == 1


def test_a_repeated_name_in_a_json_object_is_refused(api: Api) -> None:
    raw = b'{"content": "first", "content": "second"}'
    response = api.post("/v1/cards", content=raw, headers={"Content-Type": "application/json"})
    assert "repeats a name" in assert_error(response, 400, "INVALID_INPUT")["error"]
    assert api.get("/v1/cards", params={"include": "total"}).json()["total"] == 0


# Defects found in review, each pinned by the behaviour that was wrong.
@pytest.mark.parametrize(
    "body", [{"url": "https://a.example/x\n"}, {"fileName": "a\n"}, {"mimeType": "text/plain\n"}]
)
def test_a_trailing_newline_does_not_pass_a_pattern(api: Api, body: dict[str, str]) -> None:
    assert_error(api.post("/v1/cards", json=body), 400, "INVALID_INPUT")


def test_a_trailing_newline_in_a_query_parameter_is_refused(api: Api) -> None:
    assert_error(api.get("/v1/cards", params={"include": "content\n"}), 400, "INVALID_INPUT")
