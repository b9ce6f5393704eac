"""The OAuth 2.0 authorization server: authorization code with PKCE S256, exact redirect URIs,
consent, tokens, rotation with reuse detection, revocation, and metadata."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from sqlalchemy import select, text
from starlette.testclient import TestClient

from cardvault.domain.auth import credentials, oauth
from cardvault.domain.clock import now_ms
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.models import OAuthCode, OAuthToken
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.unit.handlers.web.conftest import (
    PUBLIC_URL,
    REDIRECT_URI,
    Client,
    Person,
    csrf_of,
    pkce,
    query_of,
    sign_in,
)


def _params(client: Client, challenge: str, **changes: str | None) -> dict[str, str]:
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "scope": "read write",
        "state": "st-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **changes,
    }
    return {k: v for k, v in params.items() if v is not None}


def _consent(browser: TestClient, params: dict[str, str], decision: str = "allow") -> Any:
    page = browser.get("/oauth/authorize", params=params)
    assert page.status_code == 200, page.text
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', page.text))
    return browser.post("/oauth/authorize", data={**fields, "decision": decision})


def _code(browser: TestClient, person: Person, client: Client, challenge: str, **changes: str | None) -> str:
    sign_in(browser, person)
    answer = _consent(browser, _params(client, challenge, **changes))
    assert answer.status_code == 302, answer.text
    return query_of(answer.headers["location"])["code"]


def _exchange(browser: TestClient, client: Client, code: str, verifier: str | None, **extra: str) -> Any:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": client.redirect_uri,
        "client_id": client.client_id,
    }
    if verifier is not None:
        data["code_verifier"] = verifier
    return browser.post("/oauth/token", data={**data, **extra})


def _tokens(browser: TestClient, person: Person, client: Client, scope: str = "read write") -> dict[str, Any]:
    verifier, challenge = pkce()
    code = _code(browser, person, client, challenge, scope=scope)
    response = _exchange(browser, client, code, verifier)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _refresh(browser: TestClient, client: Client, refresh_token: str) -> Any:
    return browser.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client.client_id},
    )


def _api(browser: TestClient, token: str, path: str = "/v1/cards") -> Any:
    return browser.get(path, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def elsewhere(settings: Settings, database: Database) -> Iterator[TestClient]:
    """Another API process over the same database: its credential cache is empty, so it sees a
    revocation at once (a process that verified a credential caches it for up to 5 s)."""
    with TestClient(create_app(settings, database), base_url="https://app.cardvault.test") as client:
        yield client


class TestAuthorizationRequest:
    def test_a_signed_out_browser_is_sent_to_sign_in_and_back(
        self, browser: TestClient, oauth_client: Client
    ) -> None:
        _, challenge = pkce()
        params = _params(oauth_client, challenge)
        response = browser.get("/oauth/authorize", params=params)
        assert response.status_code == 303
        location = response.headers["location"]
        assert location.startswith("/sign-in?next=")
        assert query_of(location)["next"] == "/oauth/authorize?" + urlencode(params)

    def test_the_consent_page_names_the_client_the_account_and_the_scopes(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        page = browser.get("/oauth/authorize", params=_params(oauth_client, challenge))
        assert page.status_code == 200
        assert "Allow Example App?" in page.text and person.name in page.text
        assert "<code>read</code>" in page.text and "<code>write</code>" in page.text
        assert "<code>keys</code>" not in page.text
        assert "client.example" in page.text
        assert page.headers["x-frame-options"] == "DENY"  # no clickjacking of the Allow button

    def test_allow_redirects_with_a_code_the_state_and_the_issuer(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        answer = _consent(browser, _params(oauth_client, challenge))
        assert answer.status_code == 302
        location = answer.headers["location"]
        assert location.startswith(REDIRECT_URI + "?")
        query = query_of(location)
        assert credentials.is_well_formed(query["code"], credentials.AUTHORIZATION_CODE)
        assert query["state"] == "st-123" and query["iss"] == "https://app.cardvault.test"

    def test_deny_redirects_with_access_denied(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        answer = _consent(browser, _params(oauth_client, challenge), decision="deny")
        assert answer.status_code == 302
        query = query_of(answer.headers["location"])
        assert query["error"] == "access_denied" and query["state"] == "st-123" and "code" not in query

    @pytest.mark.parametrize(
        "redirect_uri",
        [
            "https://evil.example/callback",
            "https://client.example/callback/../evil",
            "https://client.example/callback?x=1",
            "https://client.example/callbackx",
            "https://client.example.evil.example/callback",
            "http://client.example/callback",
            "https://x.example/ATTACKERTEXT Account locked call 555",
        ],
    )
    def test_an_unregistered_redirect_uri_gets_an_error_page_never_a_redirect(
        self, browser: TestClient, person: Person, oauth_client: Client, redirect_uri: str
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        response = browser.get(
            "/oauth/authorize", params=_params(oauth_client, challenge, redirect_uri=redirect_uri)
        )
        assert response.status_code == 400
        assert "location" not in response.headers
        assert "This sign-in link does not work" in response.text
        # In our words only: nothing of the address it was sent is shown.
        assert "return address it has not registered" in response.text
        assert "ATTACKERTEXT" not in response.text and "evil" not in response.text

    def test_an_unknown_client_gets_an_error_page_before_sign_in(self, browser: TestClient) -> None:
        _, challenge = pkce()
        client = Client("cli_nosuchclient", None, REDIRECT_URI)
        response = browser.get("/oauth/authorize", params=_params(client, challenge))
        assert response.status_code == 400 and "location" not in response.headers
        assert "not registered with Card Vault" in response.text

    def test_a_missing_redirect_uri_is_refused(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        response = browser.get("/oauth/authorize", params=_params(oauth_client, challenge, redirect_uri=None))
        assert response.status_code == 400 and "location" not in response.headers

    @pytest.mark.parametrize(
        ("changes", "description"),
        [
            ({"code_challenge": None, "code_challenge_method": None}, "PKCE is required"),
            ({"code_challenge_method": None}, "code_challenge_method must be S256"),
            ({"code_challenge_method": "plain"}, "code_challenge_method must be S256"),
            ({"code_challenge": "short"}, "Invalid 'code_challenge'"),
        ],
    )
    def test_pkce_s256_is_required(
        self,
        browser: TestClient,
        person: Person,
        oauth_client: Client,
        changes: dict[str, str | None],
        description: str,
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        response = browser.get("/oauth/authorize", params=_params(oauth_client, challenge, **changes))
        assert response.status_code == 302
        query = query_of(response.headers["location"])
        assert query["error"] == "invalid_request" and description in query["error_description"]
        assert query["state"] == "st-123" and "code" not in query

    def test_a_scope_the_client_may_not_ask_for_is_left_out(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        with database.transaction() as session:
            row, _ = oauth.create_client(
                session, name="Reader", redirect_uris=[REDIRECT_URI], scopes="read", now=now_ms()
            )
        reader = Client(row.id, None, REDIRECT_URI)
        tokens = _tokens(browser, person, reader, scope="read write keys")
        assert tokens["scope"] == "read"
        response = browser.post(
            "/v1/folders", json={"name": "x"}, headers={"Authorization": f"Bearer {tokens['access_token']}"}
        )
        assert response.status_code == 403 and response.json()["code"] == "INSUFFICIENT_SCOPE"

    def test_an_unknown_scope_is_refused(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        response = browser.get(
            "/oauth/authorize", params=_params(oauth_client, challenge, scope="read admin")
        )
        assert response.status_code == 302
        assert query_of(response.headers["location"])["error"] == "invalid_scope"

    def test_the_consent_form_refuses_a_missing_csrf_token(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        response = browser.post(
            "/oauth/authorize", data={**_params(oauth_client, challenge), "decision": "allow"}
        )
        assert response.status_code == 403 and "location" not in response.headers
        with_forged = browser.post(
            "/oauth/authorize",
            data={**_params(oauth_client, challenge), "decision": "allow", "csrf": "0" * 64},
        )
        assert with_forged.status_code == 403

    def test_the_consent_form_refuses_a_signed_out_browser(
        self, browser: TestClient, oauth_client: Client
    ) -> None:
        page = browser.get("/sign-in")
        _, challenge = pkce()
        response = browser.post(
            "/oauth/authorize",
            data={**_params(oauth_client, challenge), "decision": "allow", "csrf": csrf_of(page.text)},
        )
        assert response.status_code == 403 and "location" not in response.headers


class TestTokenEndpoint:
    def test_a_code_and_its_verifier_give_a_one_hour_access_token_and_a_refresh_token(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
        assert credentials.is_well_formed(tokens["access_token"], credentials.ACCESS_TOKEN)
        assert credentials.is_well_formed(tokens["refresh_token"], credentials.REFRESH_TOKEN)
        assert tokens["scope"] == "read write"
        response = _api(browser, tokens["access_token"])
        assert response.status_code == 200

    def test_the_token_acts_for_the_account_that_signed_in(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        token = _tokens(browser, person, oauth_client)["access_token"]
        created = browser.post(
            "/v1/cards", json={"content": "hello"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert created.status_code == 200
        assert created.json()["appUrl"].endswith(created.json()["cardId"])

    def test_tokens_are_stored_only_as_hashes(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        with database.transaction(write=False) as session:
            stored = {row.token_hash for row in session.scalars(select(OAuthToken))}
        assert credentials.digest(tokens["access_token"]) in stored
        assert tokens["access_token"] not in stored and tokens["refresh_token"] not in stored

    def test_a_wrong_verifier_is_invalid_grant(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        _, challenge = pkce()
        code = _code(browser, person, oauth_client, challenge)
        other, _ = pkce()
        response = _exchange(browser, oauth_client, code, other)
        assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
        assert response.headers["cache-control"] == "no-store"

    def test_a_missing_verifier_is_refused(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        _, challenge = pkce()
        code = _code(browser, person, oauth_client, challenge)
        response = _exchange(browser, oauth_client, code, None)
        assert response.status_code == 400 and response.json()["error"] == "invalid_request"

    def test_the_redirect_uri_must_match_the_authorization_request(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        verifier, challenge = pkce()
        code = _code(browser, person, oauth_client, challenge)
        response = _exchange(
            browser, oauth_client, code, verifier, redirect_uri="https://client.example/other"
        )
        assert response.status_code == 400 and response.json()["error"] == "invalid_grant"

    def test_a_replayed_code_is_refused_and_revokes_what_its_first_use_gave(
        self, browser: TestClient, person: Person, oauth_client: Client, elsewhere: TestClient
    ) -> None:
        verifier, challenge = pkce()
        code = _code(browser, person, oauth_client, challenge)
        first = _exchange(browser, oauth_client, code, verifier)
        assert first.status_code == 200
        replay = _exchange(browser, oauth_client, code, verifier)
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        assert _api(elsewhere, first.json()["access_token"]).status_code == 401
        assert _refresh(browser, oauth_client, first.json()["refresh_token"]).status_code == 400

    def test_an_expired_code_is_refused(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        verifier, challenge = pkce()
        code = _code(browser, person, oauth_client, challenge)
        with database.transaction() as session:
            row = session.get(OAuthCode, credentials.digest(code))
            assert row is not None and row.expires_at - row.created_at == 120_000
            row.expires_at = now_ms() - 1
        assert _exchange(browser, oauth_client, code, verifier).json()["error"] == "invalid_grant"

    def test_another_clients_code_is_refused(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        with database.transaction() as session:
            row, _ = oauth.create_client(session, name="Other", redirect_uris=[REDIRECT_URI], now=now_ms())
        verifier, challenge = pkce()
        code = _code(browser, person, oauth_client, challenge)
        response = _exchange(browser, Client(row.id, None, REDIRECT_URI), code, verifier)
        assert response.status_code == 400 and response.json()["error"] == "invalid_grant"

    def test_a_confidential_client_must_authenticate(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        with database.transaction() as session:
            row, secret = oauth.create_client(
                session, name="Server App", redirect_uris=[REDIRECT_URI], confidential=True, now=now_ms()
            )
        assert secret is not None
        client = Client(row.id, secret, REDIRECT_URI)
        verifier, challenge = pkce()
        code = _code(browser, person, client, challenge)
        without = _exchange(browser, client, code, verifier)
        assert without.status_code == 401 and without.json()["error"] == "invalid_client"
        code = _code(browser, person, client, challenge)
        response = _exchange(browser, client, code, verifier, client_secret=secret)
        assert response.status_code == 200

    def test_an_unsupported_grant_type_is_refused(self, browser: TestClient, oauth_client: Client) -> None:
        response = browser.post(
            "/oauth/token", data={"grant_type": "password", "username": "a", "password": "b"}
        )
        assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"

    def test_a_json_body_is_refused(self, browser: TestClient) -> None:
        response = browser.post("/oauth/token", json={"grant_type": "authorization_code"})
        assert response.status_code == 400 and response.json()["error"] == "invalid_request"

    def test_answers_browser_apps_preflight(self, browser: TestClient) -> None:
        response = browser.options("/oauth/token")
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == "*"


class TestRefresh:
    def test_rotates_on_every_use_through_a_chain_of_ten(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        seen = {tokens["refresh_token"]}
        for _ in range(10):
            response = _refresh(browser, oauth_client, tokens["refresh_token"])
            assert response.status_code == 200, response.text
            tokens = response.json()
            assert tokens["refresh_token"] not in seen and tokens["expires_in"] == 3600
            seen.add(tokens["refresh_token"])
        assert _api(browser, tokens["access_token"]).status_code == 200

    def test_a_spent_refresh_token_revokes_the_whole_family(
        self, browser: TestClient, person: Person, oauth_client: Client, elsewhere: TestClient
    ) -> None:
        first = _tokens(browser, person, oauth_client)
        second = _refresh(browser, oauth_client, first["refresh_token"]).json()
        third = _refresh(browser, oauth_client, second["refresh_token"]).json()
        reuse = _refresh(browser, oauth_client, first["refresh_token"])
        assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
        assert _refresh(browser, oauth_client, third["refresh_token"]).status_code == 400
        response = _api(elsewhere, third["access_token"])
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Bearer realm="cardvault", error="invalid_token"'
        assert response.json()["code"] == "INVALID_TOKEN"

    def test_a_narrower_scope_gives_a_narrower_access_token(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        narrower = browser.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": oauth_client.client_id,
                "scope": "read",
            },
        ).json()
        assert narrower["scope"] == "read"
        token = narrower["access_token"]
        assert _api(browser, token).status_code == 200
        refused = browser.post(
            "/v1/folders", json={"name": "n"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert refused.status_code == 403
        wider = browser.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": narrower["refresh_token"],
                "client_id": oauth_client.client_id,
                "scope": "read write keys",
            },
        )
        assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"

    def test_twenty_concurrent_refreshes_of_one_token_give_exactly_one_success(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        barrier = threading.Barrier(20)
        statuses: list[int] = []

        def refresh() -> None:
            barrier.wait()
            statuses.append(_refresh(browser, oauth_client, tokens["refresh_token"]).status_code)

        threads = [threading.Thread(target=refresh) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200] + [400] * 19

    def test_an_expired_access_token_is_401_invalid_token(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        token = _tokens(browser, person, oauth_client)["access_token"]
        with database.transaction() as session:
            row = session.get(OAuthToken, credentials.digest(token))
            assert row is not None and row.expires_at - row.created_at == 3_600_000
            row.expires_at = now_ms() - 1
        response = _api(browser, token)
        assert response.status_code == 401
        assert response.json() == {
            "code": "INVALID_TOKEN",
            "error": "The access token has expired or was revoked: refresh it, or sign in again.",
            "details": None,
            "requestId": response.headers["x-request-id"],
            "retryAt": None,
        }
        assert response.headers["www-authenticate"] == 'Bearer realm="cardvault", error="invalid_token"'

    def test_access_tokens_are_never_read_from_the_query_string(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        token = _tokens(browser, person, oauth_client)["access_token"]
        response = browser.get("/v1/cards", params={"access_token": token})
        assert response.status_code in (400, 401)


class TestRevocation:
    def test_revoking_a_refresh_token_ends_the_grant(
        self, browser: TestClient, person: Person, oauth_client: Client, elsewhere: TestClient
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        response = browser.post(
            "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": oauth_client.client_id}
        )
        assert response.status_code == 200
        assert _refresh(browser, oauth_client, tokens["refresh_token"]).status_code == 400
        assert _api(elsewhere, tokens["access_token"]).status_code == 401

    def test_revoking_an_access_token_ends_it_at_once_in_this_process(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        assert _api(browser, tokens["access_token"]).status_code == 200  # now cached
        response = browser.post(
            "/oauth/revoke",
            data={
                "token": tokens["access_token"],
                "token_type_hint": "access_token",
                "client_id": oauth_client.client_id,
            },
        )
        assert response.status_code == 200
        assert _api(browser, tokens["access_token"]).status_code == 401
        assert _refresh(browser, oauth_client, tokens["refresh_token"]).status_code == 200  # the grant lives

    def test_an_unknown_or_another_clients_token_is_answered_200_and_changes_nothing(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        with database.transaction() as session:
            row, _ = oauth.create_client(session, name="Other", redirect_uris=[REDIRECT_URI], now=now_ms())
        other = browser.post("/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": row.id})
        unknown = browser.post(
            "/oauth/revoke", data={"token": "cvr_nothing", "client_id": oauth_client.client_id}
        )
        assert other.status_code == unknown.status_code == 200
        assert _refresh(browser, oauth_client, tokens["refresh_token"]).status_code == 200


class TestMetadata:
    def test_describes_the_server_as_rfc_8414_says(self, browser: TestClient) -> None:
        response = browser.get("/.well-known/oauth-authorization-server")
        assert response.status_code == 200
        document = response.json()
        base = "https://app.cardvault.test"
        assert document["issuer"] == base
        assert document["authorization_endpoint"] == f"{base}/oauth/authorize"
        assert document["token_endpoint"] == f"{base}/oauth/token"
        assert document["revocation_endpoint"] == f"{base}/oauth/revoke"
        assert document["code_challenge_methods_supported"] == ["S256"]
        assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
        assert document["response_types_supported"] == ["code"]
        assert document["scopes_supported"] == ["read", "write", "keys"]
        assert document["authorization_response_iss_parameter_supported"] is True
        assert urlsplit(document["service_documentation"]).path == "/v1/ui/"

    def test_swagger_ui_signs_in_with_pkce_through_its_own_redirect_page(self, browser: TestClient) -> None:
        page = browser.get("/v1/ui/")
        assert page.status_code == 200
        assert '"usePkceWithAuthorizationCodeGrant": true' in page.text
        assert browser.get("/v1/ui/oauth2-redirect.html").status_code == 200


class TestRevocationHints:
    @pytest.mark.parametrize("hint", ["access_token", "refresh_token", "saml", ""])
    def test_a_hint_of_any_kind_is_ignored_as_rfc_7009_says(
        self, browser: TestClient, person: Person, oauth_client: Client, hint: str
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        response = browser.post(
            "/oauth/revoke",
            data={
                "token": tokens["refresh_token"],
                "token_type_hint": hint,
                "client_id": oauth_client.client_id,
            },
        )
        assert response.status_code == 200
        assert _refresh(browser, oauth_client, tokens["refresh_token"]).status_code == 400  # revoked

    def test_a_revocation_without_a_token_is_invalid_request(
        self, browser: TestClient, oauth_client: Client
    ) -> None:
        response = browser.post("/oauth/revoke", data={"client_id": oauth_client.client_id})
        assert response.status_code == 400 and response.json()["error"] == "invalid_request"


@contextlib.contextmanager
def _writes_held(database: Database) -> Iterator[None]:
    """Hold, on another connection, what a write would wait for: SQLite's write lock, or on
    PostgreSQL the OAuth tables (reads of them go on)."""
    holder = database.engine.connect().execution_options(write=True)
    if database.dialect == "sqlite":
        holder.execute(text("SELECT 1"))  # the engine begins it IMMEDIATE: the write lock
    else:
        holder.execute(text("LOCK TABLE oauth_codes, oauth_tokens, oauth_grants IN EXCLUSIVE MODE"))
    try:
        yield
    finally:
        holder.rollback()
        holder.close()


class TestNoWriteForWhatCannotChange:
    """A request that names no kept code or token, or only asks for a consent page, changes
    nothing, so it is answered without a write: not even while another connection holds what a
    write would wait for, past the lock timeout (150 ms here)."""

    @pytest.fixture
    def impatient(self, settings: Settings, database: Database) -> Iterator[TestClient]:
        db = open_database(database.engine.url.render_as_string(hide_password=False), lock_timeout_ms=150)
        app = create_app(settings, db)
        with TestClient(
            app, base_url=PUBLIC_URL, follow_redirects=False, raise_server_exceptions=False
        ) as client:
            yield client
        db.dispose()

    def test_an_unknown_code_or_refresh_token_is_refused_at_once(
        self, impatient: TestClient, oauth_client: Client, database: Database
    ) -> None:
        code = credentials.new_secret(credentials.AUTHORIZATION_CODE)
        refresh = credentials.new_secret(credentials.REFRESH_TOKEN)
        with _writes_held(database):
            exchanged = _exchange(impatient, oauth_client, code, "v" * 43)
            refreshed = _refresh(impatient, oauth_client, refresh)
        assert (exchanged.status_code, exchanged.json()["error"]) == (400, "invalid_grant")
        assert (refreshed.status_code, refreshed.json()["error"]) == (400, "invalid_grant")

    def test_revoking_an_unknown_token_answers_200_at_once(
        self, impatient: TestClient, oauth_client: Client, database: Database
    ) -> None:
        token = credentials.new_secret(credentials.ACCESS_TOKEN)
        with _writes_held(database):
            revoked = impatient.post(
                "/oauth/revoke", data={"token": token, "client_id": oauth_client.client_id}
            )
        assert revoked.status_code == 200

    def test_a_consent_page_and_its_refusals_need_no_write(
        self, impatient: TestClient, oauth_client: Client, database: Database
    ) -> None:
        _, challenge = pkce()
        nobody = Client("cli_nosuchclient", None, REDIRECT_URI)
        with _writes_held(database):
            unknown = impatient.get("/oauth/authorize", params=_params(nobody, challenge))
            signed_out = impatient.get("/oauth/authorize", params=_params(oauth_client, challenge))
        assert unknown.status_code == 400 and "not registered with Card Vault" in unknown.text
        assert signed_out.status_code in (302, 303) and "/sign-in" in signed_out.headers["location"]
