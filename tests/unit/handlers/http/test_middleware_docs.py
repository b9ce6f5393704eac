"""Swagger UI (/v1/ui/) shares its origin with the sign-in pages, so every response under it has
strict headers of its own: scripts only from our files and the inline scripts of the page as
served (by hash), no framing, no sniffing."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from starlette.testclient import TestClient


def _policy(response: object) -> dict[str, str]:
    header = response.headers["content-security-policy"]  # type: ignore[attr-defined]
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] for d in header.split("; ")}


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


@pytest.mark.parametrize("path", ["/v1/ui/", "/v1/ui/oauth2-redirect.html"])
def test_a_page_allows_exactly_its_own_inline_scripts(app_client: TestClient, path: str) -> None:
    response = app_client.get(path)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    inline = re.findall(r"<script>(.*?)</script>", response.text, re.S)
    assert inline, "the page has an inline script to allow"
    policy = _policy(response)
    assert policy["script-src"] == " ".join(["'self'", *(_hash(s) for s in inline)])
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert policy["connect-src"] == "'self'" and policy["base-uri"] == "'none'"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert int(response.headers["content-length"]) == len(response.content)


def test_a_script_file_streams_with_the_same_headers_and_no_inline_script(app_client: TestClient) -> None:
    response = app_client.get("/v1/ui/swagger-ui-bundle.js")
    assert response.status_code == 200
    assert _policy(response)["script-src"] == "'self'"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_api_keeps_its_own_headers(app_client: TestClient) -> None:
    assert "content-security-policy" not in app_client.get("/v1/health").headers
