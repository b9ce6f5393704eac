"""Hardening: inputs that once stalled a process, answered 500 or slipped past the contract,
each pinned by the behaviour that was wrong; here, what the request guard
(cardvault.handlers.http.middleware.RequestGuard) refuses before Connexion sees a request."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def fields(body: dict) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(f["field"], f["message"]) for f in body["details"]["fields"]]


class TestBodies:
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


def test_more_than_32_query_parameters_are_refused_before_they_are_parsed(api: Api) -> None:
    query = "&".join(f"x{i}=1" for i in range(1_000))
    body = assert_error(api.get(f"/v1/cards?{query}"), 400, "INVALID_INPUT")
    assert "at most 32 query parameters" in body["error"]


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


# Defects found in review, each pinned by the behaviour that was wrong.
@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/v1/cards"), ("PATCH", "/v1/cards/x"), ("PATCH", "/v1/cards/x/favorite")]
)
def test_a_body_without_content_type_is_415(api: Api, method: str, path: str) -> None:
    response = api.request(method, path, content=b'{"isFavorited": true}', headers={"Content-Type": ""})
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_a_chunked_body_is_read(api: Api) -> None:
    response = api.post(
        "/v1/cards",
        content=iter([b'{"content": ', b'"chunked"}']),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200 and response.json()["card"]["content"] == "chunked"


def test_a_chunked_body_over_the_limit_is_413(api: Api) -> None:
    chunks = iter([b" " * (1024 * 1024)] * 5)
    response = api.post("/v1/cards", content=chunks, headers={"Content-Type": "application/json"})
    assert_error(response, 413, "CONTENT_TOO_LARGE")
