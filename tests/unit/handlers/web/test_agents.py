"""Agent clients: /mcp's 401 points at its protected-resource metadata (RFC 9728), which names
this authorization server; a client registers itself (RFC 7591), signs a person in with PKCE
asking for /mcp as its resource (RFC 8707) and calls a tool; a token issued for another
resource is refused at /mcp; registrations are checked, counted and expire unused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardvault.domain.auth import oauth
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import OAuthClient
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import app_env
from tests.unit.handlers.web.conftest import PUBLIC_URL, Person, csrf_of, pkce, query_of, sign_in

MCP = f"{PUBLIC_URL}/mcp"
LOOPBACK = "http://127.0.0.1:33418/callback"


def _register(browser: TestClient, **metadata: Any) -> Any:
    return browser.post(
        "/oauth/register", json={"redirect_uris": [LOOPBACK], "client_name": "Agent", **metadata}
    )


def _code_for(browser: TestClient, person: Person, client_id: str, resource: str | None) -> tuple[str, str]:
    """Register-to-code: the consent page allowed; the authorization code and its verifier."""
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": LOOPBACK,
        "scope": "read write",
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **({"resource": resource} if resource else {}),
    }
    sign_in(browser, person)
    page = browser.get("/oauth/authorize", params=params)
    assert page.status_code == 200, page.text
    assert "<code>read</code>" in page.text and "<code>write</code>" in page.text  # the scopes, named
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', page.text))
    assert fields["csrf"] == csrf_of(page.text)
    answer = browser.post("/oauth/authorize", data={**fields, "decision": "allow"})
    assert answer.status_code == 302, answer.text
    return query_of(answer.headers["location"])["code"], verifier


def _token_for(browser: TestClient, client_id: str, code: str, verifier: str, resource: str | None) -> Any:
    return browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": LOOPBACK,
            "client_id": client_id,
            "code_verifier": verifier,
            **({"resource": resource} if resource else {}),
        },
    )


def _sign_in_as_agent(
    browser: TestClient, person: Person, client_id: str, resource: str | None
) -> dict[str, Any]:
    """Register-to-token: the consent page, then the code for tokens; the token response."""
    code, verifier = _code_for(browser, person, client_id, resource)
    tokens = _token_for(browser, client_id, code, verifier, resource)
    assert tokens.status_code == 200, tokens.text
    return tokens.json()  # type: ignore[no-any-return]


def _mcp(browser: TestClient, token: str | None, method: str, params: dict[str, Any] | None = None) -> Any:
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    return browser.post("/mcp", json=body, headers=headers)


class TestDiscovery:
    def test_mcp_without_a_credential_names_its_resource_metadata(self, browser: TestClient) -> None:
        response = _mcp(browser, None, "tools/list")
        assert response.status_code == 401
        assert response.json()["code"] == "UNAUTHORIZED"
        challenge = response.headers["www-authenticate"]
        found = re.search(r'resource_metadata="([^"]+)"', challenge)
        assert challenge.startswith("Bearer ") and found
        assert found.group(1) == f"{PUBLIC_URL}/.well-known/oauth-protected-resource"
        metadata = browser.get(found.group(1).removeprefix(PUBLIC_URL)).json()
        assert metadata["resource"] == MCP
        assert metadata["authorization_servers"] == [PUBLIC_URL]
        assert browser.get("/.well-known/oauth-protected-resource/mcp").json() == metadata
        server = browser.get("/.well-known/oauth-authorization-server").json()
        assert server["issuer"] == PUBLIC_URL
        assert server["registration_endpoint"] == f"{PUBLIC_URL}/oauth/register"
        assert server["code_challenge_methods_supported"] == ["S256"]


class TestRegistration:
    def test_a_public_client_with_a_loopback_or_https_redirect_registers(self, browser: TestClient) -> None:
        answer = _register(browser, redirect_uris=[LOOPBACK, "https://agent.example/cb"])
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["client_id"].startswith("cli_")
        assert body["token_endpoint_auth_method"] == "none"
        assert body["redirect_uris"] == [LOOPBACK, "https://agent.example/cb"]
        assert "client_secret" not in body
        assert body["scope"] == "read write"

    @pytest.mark.parametrize(
        "metadata",
        [
            {"redirect_uris": ["http://agent.example/cb"]},  # plain http off loopback
            {"redirect_uris": ["com.example.agent:/cb"]},  # an app's scheme: not for self-registration
            {"redirect_uris": ["https://agent.example/cb#frag"]},
            {"redirect_uris": ["https://bank.example@agent.example/cb"]},  # user information
            {"redirect_uris": ["http://user:secret@127.0.0.1:33418/cb"]},
            {"redirect_uris": []},
            {"redirect_uris": "https://agent.example/cb"},
            {"token_endpoint_auth_method": "client_secret_basic"},
            {"grant_types": ["client_credentials"]},
            {"response_types": ["token"]},
        ],
    )
    def test_anything_else_is_refused(self, browser: TestClient, metadata: dict[str, Any]) -> None:
        answer = _register(browser, **metadata)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri")

    @pytest.mark.parametrize("body", [b"{", b"[" * 10000, b"\xff\xfe", b"[]"])
    def test_a_body_that_is_no_metadata_is_refused(self, browser: TestClient, body: bytes) -> None:
        answer = browser.post("/oauth/register", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_client_metadata"

    def test_registrations_are_counted_per_address(self, tmp_path: Path, database: Database) -> None:
        env = {**app_env(tmp_path, database), "CARDVAULT_RATE_LIMIT_CLIENT_REGISTRATIONS": "2/hour"}
        with TestClient(create_app(Settings.from_env(env), database), base_url=PUBLIC_URL) as browser:
            statuses = [_register(browser).status_code for _ in range(3)]
            assert statuses == [201, 201, 429]

    def test_the_consent_page_warns_of_a_registered_client_however_often_it_was_allowed(
        self, browser: TestClient, make_person: Any
    ) -> None:
        # The one who registered it allows it first (which keeps it from expiring) ...
        client_id = _register(browser, redirect_uris=[LOOPBACK, "https://agent.example:8443/cb"]).json()[
            "client_id"
        ]
        _sign_in_as_agent(browser, make_person(), client_id, MCP)
        # ... and everyone else is still told it registered itself, and where they go back to.
        sign_in(browser, make_person())
        _, challenge = pkce()
        page = browser.get(
            "/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": "https://agent.example:8443/cb",
                "state": "s1",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": MCP,
            },
        )
        assert page.status_code == 200, page.text
        assert "registered itself" in page.text
        assert '<span class="uri">agent.example</span>' in page.text

    def test_a_client_an_operator_made_is_not_said_to_have_registered_itself(
        self, browser: TestClient, database: Database, person: Person
    ) -> None:
        with database.transaction() as session:
            client, _ = oauth.create_client(
                session, name="Operator's", redirect_uris=[LOOPBACK], now=now_ms()
            )
        sign_in(browser, person)
        _, challenge = pkce()
        page = browser.get(
            "/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": client.id,
                "redirect_uri": LOOPBACK,
                "state": "s1",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
        )
        assert page.status_code == 200, page.text
        assert "registered itself" not in page.text

    def test_an_unused_registration_expires_and_a_used_one_stays(
        self, browser: TestClient, database: Database, person: Person
    ) -> None:
        unused = _register(browser).json()["client_id"]
        used = _register(browser).json()["client_id"]
        _sign_in_as_agent(browser, person, used, MCP)
        with database.transaction() as session:
            oauth.forget_expired(session, now=now_ms() + oauth.REGISTRATION_MS + 1)
        with database.transaction() as session:
            assert session.get(OAuthClient, unused) is None
            assert session.get(OAuthClient, used) is not None


class TestAudience:
    def test_a_registered_agent_signs_in_for_mcp_and_calls_a_tool(
        self, browser: TestClient, person: Person
    ) -> None:
        client_id = _register(browser).json()["client_id"]
        tokens = _sign_in_as_agent(browser, person, client_id, MCP)
        listed = _mcp(browser, tokens["access_token"], "tools/list")
        assert listed.status_code == 200, listed.text
        assert "createCard" in {tool["name"] for tool in listed.json()["result"]["tools"]}
        made = _mcp(
            browser,
            tokens["access_token"],
            "tools/call",
            {"name": "createCard", "arguments": {"body": {"content": "from an agent"}}},
        )
        assert made.json()["result"]["isError"] is False, made.text
        assert made.json()["result"]["structuredContent"]["card"]["content"] == "from an agent"

    @pytest.mark.parametrize("resource", [f"{PUBLIC_URL}/v1", None])
    def test_a_token_issued_for_another_resource_is_refused_at_mcp(
        self, browser: TestClient, person: Person, resource: str | None
    ) -> None:
        client_id = _register(browser).json()["client_id"]
        token = _sign_in_as_agent(browser, person, client_id, resource)["access_token"]
        refused = _mcp(browser, token, "tools/list")
        assert refused.status_code == 401
        assert refused.json()["code"] == "INVALID_TOKEN"
        assert 'error="invalid_token"' in refused.headers["www-authenticate"]
        assert "resource_metadata=" in refused.headers["www-authenticate"]
        # The API itself takes it.
        assert browser.get("/v1/cards", headers={"Authorization": f"Bearer {token}"}).status_code == 200

    def test_a_token_issued_for_mcp_is_refused_on_the_api_itself(
        self, browser: TestClient, person: Person
    ) -> None:
        client_id = _register(browser).json()["client_id"]
        token = _sign_in_as_agent(browser, person, client_id, MCP)["access_token"]
        # Through /mcp its tool calls reach /v1 ...
        listed = _mcp(browser, token, "tools/call", {"name": "listCards", "arguments": {}})
        assert listed.json()["result"]["isError"] is False, listed.text
        # ... but sent to /v1 directly it is no credential there.
        for method, path in [("GET", "/v1/cards"), ("POST", "/v1/cards")]:
            refused = browser.request(
                method, path, headers={"Authorization": f"Bearer {token}"}, json={"content": "x"}
            )
            assert refused.status_code == 401, refused.text
            assert refused.json()["code"] == "INVALID_TOKEN"
            assert 'error="invalid_token"' in refused.headers["www-authenticate"]

    def test_a_resource_not_ours_is_refused_at_the_authorization_endpoint(
        self, browser: TestClient, person: Person
    ) -> None:
        client_id = _register(browser).json()["client_id"]
        _, challenge = pkce()
        sign_in(browser, person)
        answer = browser.get(
            "/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": LOOPBACK,
                "state": "s1",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": "https://elsewhere.example/mcp",
            },
        )
        assert answer.status_code == 302
        assert query_of(answer.headers["location"])["error"] == "invalid_target"
        assert query_of(answer.headers["location"])["state"] == "s1"

    @pytest.mark.parametrize("named", [None, f"{PUBLIC_URL}/v1"])
    def test_a_code_not_asked_for_mcp_cannot_be_spent_for_mcp(
        self, browser: TestClient, person: Person, named: str | None
    ) -> None:
        # The consent page did not say the client was an agent: the token endpoint cannot widen
        # the code to /mcp (RFC 8707: the token request names the authorization request's resource).
        client_id = _register(browser).json()["client_id"]
        code, verifier = _code_for(browser, person, client_id, named)
        refused = _token_for(browser, client_id, code, verifier, MCP)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_target"

    def test_a_code_asked_for_nothing_can_be_spent_for_the_api(
        self, browser: TestClient, person: Person
    ) -> None:
        client_id = _register(browser).json()["client_id"]
        code, verifier = _code_for(browser, person, client_id, None)
        tokens = _token_for(browser, client_id, code, verifier, f"{PUBLIC_URL}/v1")
        assert tokens.status_code == 200, tokens.text
        token = tokens.json()["access_token"]
        assert browser.get("/v1/cards", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert _mcp(browser, token, "tools/list").status_code == 401
        # The grant keeps the resource it was spent for: a refresh naming it again is taken.
        refreshed = browser.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens.json()["refresh_token"],
                "client_id": client_id,
                "resource": f"{PUBLIC_URL}/v1",
            },
        )
        assert refreshed.status_code == 200, refreshed.text

    def test_the_token_request_cannot_change_the_resource(self, browser: TestClient, person: Person) -> None:
        client_id = _register(browser).json()["client_id"]
        tokens = _sign_in_as_agent(browser, person, client_id, MCP)
        refreshed = browser.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client_id,
                "resource": f"{PUBLIC_URL}/v1",
            },
        )
        assert refreshed.status_code == 400
        assert refreshed.json()["error"] == "invalid_target"
        again = browser.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client_id,
            },
        )
        assert again.status_code == 200, again.text  # the refused request spent nothing
        assert _mcp(browser, again.json()["access_token"], "tools/list").status_code == 200
