"""Hostile input and attacks on the sign-in, consent, token, revocation and card pages.

Two kinds of test live here:

- ``TestRegression*`` classes each pin a problem a hostile review found (their docstrings tell
  what it was); each failed before its fix.
- ``TestCorpus*`` classes are a corpus of hostile requests that must keep passing: every answer
  is a 2xx/3xx/4xx, never a 500 or a framework default page, never a redirect off the site or to
  an unregistered URI, and (where it applies) nothing changes in the database."""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
from sqlalchemy import event, func, select
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from cardvault.domain import folders
from cardvault.domain.auth import keys, oauth
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import ApiKey, Card, OAuthCode, OAuthGrant, OAuthToken, WebSession
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import app_env
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

FORM = {"content-type": "application/x-www-form-urlencoded"}
HOST = urlsplit(PUBLIC_URL).netloc


# ----------------------------------------------------------------------------- helpers


def _params(client: Client, challenge: str, **changes: str | None) -> dict[str, str]:
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "scope": "read write",
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **changes,
    }
    return {k: v for k, v in params.items() if v is not None}


def _hidden_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', html))


def _tokens(browser: TestClient, person: Person, client: Client, scope: str = "read write") -> dict[str, Any]:
    """Sign in, allow, and exchange the code: the token response."""
    verifier, challenge = pkce()
    sign_in(browser, person)
    page = browser.get("/oauth/authorize", params=_params(client, challenge, scope=scope))
    assert page.status_code == 200, page.text
    answer = browser.post("/oauth/authorize", data={**_hidden_fields(page.text), "decision": "allow"})
    assert answer.status_code == 302, answer.text
    code = query_of(answer.headers["location"])["code"]
    response = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": client.redirect_uri,
            "client_id": client.client_id,
            "code_verifier": verifier,
        },
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _refresh(browser: TestClient, client: Client, refresh_token: str, **extra: str) -> Any:
    return browser.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": client.client_id,
            **extra,
        },
    )


def _bearer(browser: TestClient, token: str, path: str = "/v1/cards") -> Any:
    return browser.get(path, headers={"Authorization": f"Bearer {token}"})


def _state(database: Database, *, client_id: str, account_id: str) -> dict[str, int]:
    """What a request could change for this client and account: codes issued and used, grants
    and their revocations, tokens and their spends and revocations, browser sessions, API keys."""

    def count(statement: Any) -> int:
        return int(session.scalar(statement) or 0)

    with database.transaction(write=False) as session:
        grants = select(OAuthGrant.id).where(OAuthGrant.client_id == client_id).scalar_subquery()
        codes = select(func.count()).select_from(OAuthCode).where(OAuthCode.client_id == client_id)
        tokens = select(func.count()).select_from(OAuthToken).where(OAuthToken.grant_id.in_(grants))
        return {
            "codes": count(codes),
            "used_codes": count(codes.where(OAuthCode.used_at.is_not(None))),
            "grants": count(
                select(func.count()).select_from(OAuthGrant).where(OAuthGrant.client_id == client_id)
            ),
            "revoked_grants": count(
                select(func.count())
                .select_from(OAuthGrant)
                .where(OAuthGrant.client_id == client_id, OAuthGrant.revoked_at.is_not(None))
            ),
            "tokens": count(tokens),
            "spent_tokens": count(tokens.where(OAuthToken.spent_at.is_not(None))),
            "revoked_tokens": count(tokens.where(OAuthToken.revoked_at.is_not(None))),
            "sessions": count(
                select(func.count()).select_from(WebSession).where(WebSession.account_id == account_id)
            ),
            "keys": count(select(func.count()).select_from(ApiKey).where(ApiKey.account_id == account_id)),
        }


def _same_site(location: str) -> bool:
    """Whether a browser following this Location stays on the app's origin."""
    target = urlsplit(urljoin(PUBLIC_URL + "/sign-in", location))
    return target.scheme == "https" and target.netloc == HOST


def _assert_no_server_error(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    # Never a framework default page: Starlette's plain-text answers.
    assert response.text not in ("Internal Server Error", "Not Found", "Method Not Allowed")


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def _elements(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.found


@pytest.fixture
def nul_statements(database: Database) -> Iterator[list[str]]:
    """The SQL statements sent with a parameter holding NUL (U+0000). PostgreSQL's driver
    refuses such a value ("PostgreSQL text fields cannot contain NUL (0x00) bytes", a DataError:
    a 500), so on the SQLite tier this is how a request that would fail there shows itself."""
    seen: list[str] = []

    def values(parameters: Any) -> Iterator[Any]:
        if isinstance(parameters, dict):
            yield from parameters.values()
        elif isinstance(parameters, (list, tuple)):
            for item in parameters:
                yield from values(item) if isinstance(item, (dict, list, tuple)) else [item]

    def spy(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if any(isinstance(v, str) and "\x00" in v for v in values(parameters)):
            seen.append(statement)

    event.listen(database.engine, "before_cursor_execute", spy)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", spy)


@pytest.fixture
def other_client(database: Database) -> Client:
    with database.transaction() as session:
        row, _ = oauth.create_client(session, name="Other App", redirect_uris=[REDIRECT_URI], now=now_ms())
    return Client(row.id, None, REDIRECT_URI)


@pytest.fixture
def fresh_process(settings: Settings, database: Database) -> Iterator[TestClient]:
    """Another API process over the same database (an empty credential cache)."""
    with TestClient(create_app(settings, database), base_url=PUBLIC_URL) as client:
        yield client


def _limited_app(tmp_path: Path, database: Database, *, account: str, address: str) -> Any:
    env = {
        **app_env(tmp_path, database),
        "CARDVAULT_RATE_LIMIT_SIGN_IN_ACCOUNT": account,
        "CARDVAULT_RATE_LIMIT_SIGN_IN_ADDRESS": address,
    }
    return create_app(Settings.from_env(env), database)


class _ClientAddress:
    """Let a test name the client address of each request (X-Test-Client), as a server's
    socket would see it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"x-test-client":
                    scope = {**scope, "client": (value.decode(), 50000)}
        await self.app(scope, receive, send)


# ============================================================================ problems


class TestRegressionHostileOAuthInputIsNeverA500:
    """Authlib refuses to build an error whose description holds a character outside RFC 6749's
    set (``"``, ``\\``, non-ASCII): its OAuth2Error raises ValueError, and two of its errors put
    the request's own values in their description. Its Basic header parser lets a non-UTF-8 or
    non-ASCII value raise. Each is a 500 any visitor can cause, without signing in."""

    @pytest.mark.parametrize("response_type", ['"', "\\", "é", 'code"'])
    def test_a_response_type_with_a_forbidden_character_is_not_a_500(
        self, browser: TestClient, oauth_client: Client, response_type: str
    ) -> None:
        _, challenge = pkce()
        response = browser.get(
            "/oauth/authorize", params=_params(oauth_client, challenge, response_type=response_type)
        )
        _assert_no_server_error(response)
        if response.status_code == 302:  # unsupported_response_type, to the registered URI
            assert response.headers["location"].startswith(REDIRECT_URI + "?")
            assert query_of(response.headers["location"])["error"] == "unsupported_response_type"

    @pytest.mark.parametrize(
        "redirect_uri",
        [
            'https://evil.example/"',
            "https://evil.example/\\",
            "https://évil.example/cb",
            "https://evil.example\\@client.example/callback",
            REDIRECT_URI + "\x00",
        ],
    )
    def test_an_unregistered_redirect_uri_with_a_forbidden_character_gets_the_error_page(
        self, browser: TestClient, oauth_client: Client, redirect_uri: str
    ) -> None:
        _, challenge = pkce()
        response = browser.get(
            "/oauth/authorize", params=_params(oauth_client, challenge, redirect_uri=redirect_uri)
        )
        assert response.status_code == 400, response.text[:300]
        assert "location" not in response.headers

    @pytest.mark.parametrize(
        "changes",
        [{"response_type": '"'}, {"redirect_uri": 'https://evil.example/"'}, {"response_type": "é"}],
    )
    def test_the_consent_form_with_a_forbidden_character_is_not_a_500(
        self,
        browser: TestClient,
        person: Person,
        oauth_client: Client,
        database: Database,
        changes: dict[str, str],
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        page = browser.get("/oauth/authorize", params=_params(oauth_client, challenge))
        fields = {**_hidden_fields(page.text), **changes}
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        response = browser.post("/oauth/authorize", data={**fields, "decision": "allow"})
        _assert_no_server_error(response)
        assert "location" not in response.headers
        after = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        assert after == before

    @pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
    @pytest.mark.parametrize(
        "authorization",
        [
            b"Basic /w==",  # base64 of 0xFF: not UTF-8
            b"Basic " + base64.b64encode(b"\xff\xfe:\xfd"),
            b"Basic \xc3\xa9\xc3\xa9",  # not ASCII at all
        ],
    )
    def test_a_basic_header_that_is_not_utf8_is_invalid_client_not_a_500(
        self, browser: TestClient, oauth_client: Client, path: str, authorization: bytes
    ) -> None:
        data = {"grant_type": "authorization_code", "code": "x", "token": "x"}
        response = browser.post(path, data=data, headers={"Authorization": authorization})  # type: ignore[dict-item]
        _assert_no_server_error(response)
        assert response.json()["error"] in ("invalid_client", "invalid_request")


class TestRegressionARefusedRefreshSpendsNothing:
    def test_a_refresh_asking_for_a_wider_scope_leaves_the_refresh_token_usable(
        self,
        browser: TestClient,
        person: Person,
        oauth_client: Client,
        fresh_process: TestClient,
    ) -> None:
        """RFC 6749 §6/§5.2: a refused refresh changes nothing. Here the token is spent before
        the scope is checked (spend_refresh_token runs in authenticate_refresh_token, and the
        transaction commits the error's writes), so the client's next, valid, refresh looks
        like a stolen token's reuse and revokes the whole family: the person is signed out of
        the app by an app's harmless mistake."""
        tokens = _tokens(browser, person, oauth_client, scope="read")
        wider = _refresh(browser, oauth_client, tokens["refresh_token"], scope="read write")
        assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"
        retry = _refresh(browser, oauth_client, tokens["refresh_token"])
        assert retry.status_code == 200, retry.text
        assert _bearer(fresh_process, tokens["access_token"]).status_code == 200


class TestRegressionErrorRedirectsCarryTheIssuer:
    @pytest.mark.parametrize(
        ("changes", "error"),
        [
            ({"code_challenge_method": None}, "invalid_request"),
            ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
            ({"scope": "read admin"}, "invalid_scope"),
            ({"response_type": "token"}, "unsupported_response_type"),
        ],
    )
    def test_an_error_redirect_carries_iss(
        self, browser: TestClient, oauth_client: Client, changes: dict[str, str | None], error: str
    ) -> None:
        """RFC 9207 §2: "In authorization responses to the client, including error responses,
        an authorization server supporting this specification MUST indicate its identity by
        including the iss parameter" (the metadata says it does). Errors found while checking
        the request go out through handle_error_response, past the extension's hook."""
        _, challenge = pkce()
        response = browser.get("/oauth/authorize", params=_params(oauth_client, challenge, **changes))
        assert response.status_code == 302
        query = query_of(response.headers["location"])
        assert query["error"] == error
        assert query.get("iss") == PUBLIC_URL


class TestRegressionSignInLimitHoldsUnderConcurrency:
    def test_concurrent_guesses_check_no_more_passwords_than_the_limit(
        self, tmp_path: Path, database: Database, person: Person
    ) -> None:
        """The limit is looked at (peek) before the password is checked and counted (take)
        after: guesses sent at once all see room, and each costs an Argon2 hash. With a limit of
        3 failures, 20 concurrent guesses check far more than 3 passwords (13 in one run)."""
        app = _limited_app(tmp_path, database, account="3/15 minutes", address="1000/15 minutes")
        with TestClient(app, base_url=PUBLIC_URL, follow_redirects=False) as client:
            csrf = csrf_of(client.get("/sign-in").text)
            barrier = threading.Barrier(20)
            statuses: list[int] = []

            def guess(n: int) -> None:
                barrier.wait()
                answer = client.post(
                    "/sign-in", data={"csrf": csrf, "email": person.email, "password": f"guess number {n}"}
                )
                statuses.append(answer.status_code)

            threads = [threading.Thread(target=guess, args=(n,)) for n in range(20)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert set(statuses) <= {401, 429}
        assert statuses.count(401) <= 3, f"{statuses.count(401)} passwords checked, the limit is 3"

    @pytest.mark.parametrize(
        "addresses",
        [
            ["192.0.2.7"] * 6,  # IPv4: the address itself
            ["192.0.2.7", "::ffff:192.0.2.7", "192.0.2.7", "::ffff:192.0.2.7", "192.0.2.7", "192.0.2.7"],
        ],
    )
    def test_the_address_limit_counts_an_ipv4_address_however_it_is_written(
        self, tmp_path: Path, database: Database, addresses: list[str]
    ) -> None:
        app = _limited_app(tmp_path, database, account="100/15 minutes", address="3/15 minutes")
        with TestClient(_ClientAddress(app), base_url=PUBLIC_URL, follow_redirects=False) as client:
            csrf = csrf_of(client.get("/sign-in").text)
            statuses = [
                client.post(
                    "/sign-in",
                    data={"csrf": csrf, "email": f"nobody-{n}@example.com", "password": "a wrong password"},
                    headers={"X-Test-Client": address},
                ).status_code
                for n, address in enumerate(addresses)
            ]
        assert statuses == [401, 401, 401, 429, 429, 429]

    def test_the_address_limit_covers_an_ipv6_slash_64(self, tmp_path: Path, database: Database) -> None:
        """The per-address key is the exact client address. One IPv6 host usually holds a whole
        /64 (2**64 addresses), so the limit meant to stop guessing across accounts from one
        address does not hold for it."""
        app = _limited_app(tmp_path, database, account="100/15 minutes", address="3/15 minutes")
        with TestClient(_ClientAddress(app), base_url=PUBLIC_URL, follow_redirects=False) as client:
            csrf = csrf_of(client.get("/sign-in").text)
            statuses = [
                client.post(
                    "/sign-in",
                    data={"csrf": csrf, "email": f"nobody-{n}@example.com", "password": "a wrong password"},
                    headers={"X-Test-Client": f"2001:db8:5:6::{n + 1:x}"},
                ).status_code
                for n in range(6)
            ]
        assert statuses[:3] == [401, 401, 401]
        assert statuses[3:] == [429, 429, 429], statuses


class TestRegressionNulBytesNeverReachTheDatabase:
    """NUL is refused by PostgreSQL (psycopg: DataError, so 500); the API refuses it in every
    string (the spec's pattern '^[^\\x00]*$'), but these pages pass it to a query."""

    def test_sign_in_with_a_nul_in_the_email(
        self, browser: TestClient, person: Person, nul_statements: list[str]
    ) -> None:
        csrf = csrf_of(browser.get("/sign-in").text)
        response = browser.post(
            "/sign-in", data={"csrf": csrf, "email": person.email + "\x00", "password": person.password}
        )
        assert response.status_code in (400, 401)
        assert nul_statements == []

    @pytest.mark.parametrize(
        ("method", "path", "fields"),
        [
            ("GET", "/oauth/authorize", {"response_type": "code", "client_id": "cli_\x00"}),
            (
                "POST",
                "/oauth/token",
                {"grant_type": "authorization_code", "code": "x", "client_id": "cli_\x00"},
            ),
            ("POST", "/oauth/revoke", {"token": "x", "client_id": "cli_\x00"}),
        ],
    )
    def test_oauth_endpoints_with_a_nul_in_the_client_id(
        self,
        browser: TestClient,
        nul_statements: list[str],
        method: str,
        path: str,
        fields: dict[str, str],
    ) -> None:
        if method == "GET":
            response = browser.get(path, params={**fields, "redirect_uri": REDIRECT_URI})
        else:
            response = browser.post(path, data=fields)
        _assert_no_server_error(response)
        assert nul_statements == []

    def test_a_basic_client_id_with_a_nul(self, browser: TestClient, nul_statements: list[str]) -> None:
        basic = base64.b64encode(b"cli_\x00:cvx_secret").decode()
        response = browser.post(
            "/oauth/token",
            data={"grant_type": "authorization_code", "code": "x"},
            headers={"Authorization": f"Basic {basic}"},
        )
        _assert_no_server_error(response)
        assert nul_statements == []


class TestRegressionCardPageRendersOffTheEventLoop:
    def test_a_hostile_card_page_does_not_hold_up_other_requests(
        self, browser: TestClient, person: Person, database: Database, fresh_process: TestClient
    ) -> None:
        """card_page rendered Markdown on the event loop, and markdown-it takes ~50 µs a character
        on unclosed image/link brackets: a 512 KiB text card of "![" held every request of the
        process for ~26 s on each view. Such a text is shown as plain text now (rendered, it
        would be too dear), and a request sent while it is viewed is answered. (How long the
        answer took is no test: a loaded machine stretches any wall-clock bound.)"""
        with database.transaction() as session:
            card_id = editing.add_card(
                session, account_id=person.account_id, content="![" * 60_000, card_type="text"
            ).card.id
        sign_in(browser, person)
        result: list[Any] = []
        viewer = threading.Thread(target=lambda: result.append(browser.get(f"/cards/{card_id}")))
        viewer.start()
        metadata = browser.get("/.well-known/oauth-authorization-server")
        viewer.join()
        (page,) = result
        assert metadata.status_code == 200 and page.status_code == 200
        assert '<pre class="plain">' + "![" * 10 in page.text


class TestRegressionCardHeading:
    def test_a_long_opening_heading_line_renders_quickly(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        """_MARKDOWN_HEADING, ``#{1,6}[ \\t]+(.+?)[ \\t#]*`` under fullmatch, backtracked
        quadratically on a first line of many ``#`` (or spaces) before a last character: 40,000
        took ~3 s, a 512 KiB first line several minutes, on the event loop (every request of the
        process waits). Counted in this process's CPU time (the server is a thread of it), which
        a loaded machine does not stretch as it does the wall clock: linear, the page of the
        longest first line takes a fraction of the bound; quadratic, minutes."""
        with database.transaction() as session:
            card_id = editing.add_card(
                session, account_id=person.account_id, content="# " + "#" * 500_000 + "x", card_type="text"
            ).card.id
        sign_in(browser, person)
        started = time.process_time()
        page = browser.get(f"/cards/{card_id}")
        took = time.process_time() - started
        assert page.status_code == 200
        assert took < 20, f"the card page took {took:.1f} s of CPU"

    @pytest.mark.parametrize("url", ["https://[x/", "https://[::1", "http://[a]b/", "https://a]/"])
    def test_a_link_card_whose_url_the_api_took_has_a_page(
        self, browser: TestClient, person: Person, database: Database, url: str
    ) -> None:
        """The API's URL pattern takes these; _heading's urlsplit(url).netloc raises ValueError
        (an IPv6 literal it cannot parse): a 500 for the card's owner."""
        with database.transaction() as session:
            key = keys.issue_api_key(session, account_id=person.account_id)
        created = browser.post("/v1/cards", json={"url": url}, headers={"Authorization": f"Bearer {key}"})
        assert created.status_code == 200, created.text
        sign_in(browser, person)
        page = browser.get(f"/cards/{created.json()['cardId']}")
        assert page.status_code == 200, page.text[:200]


class TestRegressionRevocationClearsTheCredentialCache:
    def test_revoking_a_refresh_token_ends_its_access_tokens_at_once_in_this_process(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        """revoke() forgets only the presented token's digest: after a refresh token is revoked
        (or reused: the family revocation of RFC 9700 §4.14.2), the grant's access tokens this
        process verified keep working for up to 5 s here, contrary to revoke()'s "at once in
        this process"."""
        tokens = _tokens(browser, person, oauth_client)
        assert _bearer(browser, tokens["access_token"]).status_code == 200  # now cached
        revoked = browser.post(
            "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": oauth_client.client_id}
        )
        assert revoked.status_code == 200
        assert _bearer(browser, tokens["access_token"]).status_code == 401


class TestRegressionKeysMintedByAnAppEndWithItsGrant:
    def test_an_api_key_an_app_created_ends_with_the_apps_grant(
        self, browser: TestClient, person: Person, oauth_client: Client, fresh_process: TestClient
    ) -> None:
        """A client granted ``keys`` turns its grant (1-hour tokens, a family that ends in 90
        days, on revocation, or on a new password) into an API key that never ends: revoking
        the app, or changing the password, leaves the app with full access."""
        tokens = _tokens(browser, person, oauth_client, scope="read write keys")
        created = browser.post(
            "/v1/api-keys",
            json={"name": "made by the app", "scopes": ["read", "write"]},
            headers={"Authorization": f"Bearer {tokens['access_token']}"},
        )
        if created.status_code == 403:
            return  # a fix may refuse apps the power to make keys at all
        assert created.status_code == 201, created.text
        key = created.json()["key"]
        revoked = browser.post(
            "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": oauth_client.client_id}
        )
        assert revoked.status_code == 200
        assert _bearer(fresh_process, tokens["access_token"]).status_code == 401  # the grant ended
        assert _bearer(fresh_process, key).status_code == 401, "the app's API key outlives its grant"


# ============================================================================== corpus


# Each corpus test below walks its list in one test (one app, one sign-in), naming the case in
# its assertion message: the lists are long, and a test of its own each would cost seconds.

_BAD_BODIES = [
    ("application/x-www-form-urlencoded", b"\xff\xfe\xfd"),
    ("application/x-www-form-urlencoded", b"email=%ff%fe&password=x"),
    ("application/x-www-form-urlencoded", b"email=%C0%AF&password=x"),  # overlong UTF-8
    ("application/x-www-form-urlencoded", b"email=%ED%A0%80"),  # a lone surrogate
    ("application/x-www-form-urlencoded", b"a=" + b"x" * 20_000),
    ("application/x-www-form-urlencoded", b"&".join([b"a=1"] * 41)),
    ("application/x-www-form-urlencoded", b""),
    ("application/x-www-form-urlencoded", b"%"),
    ("application/x-www-form-urlencoded", b"=&=&="),
    ("application/x-www-form-urlencoded; charset=latin-1", b"email=\xe9"),
    ("Application/X-WWW-Form-Urlencoded", b"email=%ff"),
    ("application/json", b'{"email": "a@b.c", "password": "x"}'),
    (
        "multipart/form-data; boundary=x",
        b'--x\r\nContent-Disposition: form-data; name="email"\r\n\r\na\r\n--x--',
    ),
    ("text/plain", b"email=a&password=b"),
    ("", b"email=a&password=b"),
]


class TestCorpusSignIn:
    @pytest.mark.parametrize("path", ["/sign-in", "/sign-out", "/oauth/authorize"])
    def test_a_hostile_body_is_refused_and_starts_nothing(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database, path: str
    ) -> None:
        csrf_of(browser.get("/sign-in").text)  # the browser holds a CSRF cookie
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        for content_type, body in _BAD_BODIES:
            case = f"{path} {content_type!r} {body[:40]!r}"
            headers = {"content-type": content_type} if content_type else {}
            response = browser.post(path, content=body, headers=headers)
            assert response.status_code in (400, 401, 403), (case, response.status_code, response.text[:200])
            assert "cv_session=cvs_" not in (response.headers.get("set-cookie") or ""), case
            assert "location" not in response.headers, case
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before

    def test_a_body_over_the_limit_sent_chunked_or_with_a_false_length_is_refused(
        self, browser: TestClient
    ) -> None:
        def chunks() -> Iterator[bytes]:
            yield b"email=a"
            for _ in range(10):
                yield b"x" * 4096

        chunked = browser.post("/sign-in", content=chunks(), headers=FORM)
        lying = browser.post("/sign-in", content=b"email=a", headers={**FORM, "content-length": "99999999"})
        assert chunked.status_code == 400 and lying.status_code == 400

    def test_hostile_fields_with_a_valid_token_sign_no_one_in(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        csrf = csrf_of(browser.get("/sign-in").text)
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        for fields in [
            {"password": "x"},  # no email
            {"email": "{email}"},  # no password
            {"email": "   ", "password": "x"},
            {"email": "a" * 300 + "@example.com", "password": "x"},
            {"email": "{email}", "password": "p" * 15_000},
            {"email": "ÉMILE@exämple.com", "password": "x"},
            {"email": "{email}\r\nBcc: x@example.com", "password": "x"},
            {"email": "{email}", "password": ""},
            {"email": "{email}", "password": "{password} "},
            {"email": "%", "password": "%00"},
            {"email": '"><script>alert(1)</script>', "password": "x"},
        ]:
            data = {k: v.format(email=person.email, password=person.password) for k, v in fields.items()}
            response = browser.post("/sign-in", data={"csrf": csrf, **data})
            assert response.status_code == 401, (fields, response.status_code)
            assert "cv_session=" not in (response.headers.get("set-cookie") or ""), fields
            assert "<script" not in response.text, fields
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before

    def test_the_first_email_counts_when_the_field_repeats(self, browser: TestClient, person: Person) -> None:
        csrf = csrf_of(browser.get("/sign-in").text)
        body = (
            f"csrf={csrf}&email=nobody%40example.com&email={person.email.replace('@', '%40')}"
            f"&password={person.password.replace(' ', '+')}"
        )
        response = browser.post("/sign-in", content=body.encode(), headers=FORM)
        assert response.status_code == 401

    def test_a_sign_in_from_another_origin_is_refused_even_with_the_token(
        self, browser: TestClient, person: Person
    ) -> None:
        csrf = csrf_of(browser.get("/sign-in").text)
        for origin in [
            "null",
            "https://evil.example",
            "http://app.cardvault.test",
            "https://app.cardvault.test.evil.example",
            "https://app.cardvault.test:443",
        ]:
            response = browser.post(
                "/sign-in",
                data={"csrf": csrf, "email": person.email, "password": person.password},
                headers={"Origin": origin},
            )
            assert response.status_code == 403, origin
            assert "cv_session=" not in (response.headers.get("set-cookie") or ""), origin

    def test_a_sign_out_from_another_origin_keeps_the_session(
        self, browser: TestClient, person: Person
    ) -> None:
        sign_in(browser, person)
        csrf = csrf_of(browser.get("/sign-in").text)
        response = browser.post("/sign-out", data={"csrf": csrf}, headers={"Origin": "https://evil.example"})
        assert response.status_code == 403
        assert "You are signed in as" in browser.get("/sign-in").text

    def test_next_never_leaves_the_site(self, tmp_path: Path, database: Database, person: Person) -> None:
        app = _limited_app(tmp_path, database, account="1000/15 minutes", address="1000/15 minutes")
        with TestClient(app, base_url=PUBLIC_URL, follow_redirects=False) as browser:
            self._sign_in_with_each_next(browser, person)

    def _sign_in_with_each_next(self, browser: TestClient, person: Person) -> None:
        for next_path in [
            "/%2F%2Fevil.example",
            "/.//evil.example",
            "/%5Cevil.example",
            "/\u3000/evil.example",
            "/\uff0f\uff0fevil.example",
            "/\u2028//evil.example",
            "/\x00//evil.example",
            "/\t/evil.example",
            "https:/evil.example",
            "/" + "a" * 5000,
            "/sign-in?next=//evil.example",
            "/oauth/authorize?redirect_uri=https://evil.example/",
        ]:
            csrf = csrf_of(browser.get("/sign-in").text)
            response = browser.post(
                "/sign-in",
                data={"csrf": csrf, "email": person.email, "password": person.password, "next": next_path},
            )
            if "\x00" in next_path:  # a form holding NUL is refused whole
                assert response.status_code == 400, next_path
                continue
            assert response.status_code == 303, next_path
            assert _same_site(response.headers["location"]), (next_path, response.headers["location"])
            again = browser.get("/sign-in", params={"next": next_path})  # signed in: straight on
            _assert_no_server_error(again)
            if again.status_code == 303:
                assert _same_site(again.headers["location"]), (next_path, again.headers["location"])


class TestCorpusMethodsAndPaths:
    def test_every_method_on_every_page_is_answered_without_a_500(self, browser: TestClient) -> None:
        for path in [
            "/sign-in",
            "/sign-out",
            "/oauth/authorize",
            "/oauth/token",
            "/oauth/revoke",
            "/.well-known/oauth-authorization-server",
            "/cards/crd_x",
            "/static/cardvault.css",
        ]:
            for method in ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "POST"]:
                response = browser.request(method, path)
                assert response.status_code < 500, (method, path, response.status_code)
                if response.status_code == 405:
                    assert response.headers["content-type"] == "application/json", (method, path)
                    assert response.headers["allow"], (method, path)
                    if method != "HEAD":
                        assert response.json()["code"] == "METHOD_NOT_ALLOWED", (method, path)

    def test_near_miss_paths_are_the_apis_json_404(self, browser: TestClient) -> None:
        for path in [
            "/sign-in/",
            "/oauth/token/",
            "/oauth/",
            "/cards/",
            "/static/..%2FREADME.md",
            "/static/x.css",
        ]:
            response = browser.get(path)
            assert response.status_code == 404, path
            assert response.headers["content-type"] == "application/json", path


_AUTHORIZE_MUTATIONS: list[Any] = [
    [],
    [("client_id", "{client}")],
    [("response_type", "code"), ("client_id", "{client}"), ("client_id", "cli_other")],
    [
        ("response_type", "code"),
        ("client_id", "{client}"),
        ("redirect_uri", "{redirect}"),
        ("redirect_uri", "https://evil.example/"),
    ],
    [
        ("response_type", "code"),
        ("response_type", "token"),
        ("client_id", "{client}"),
        ("redirect_uri", "{redirect}"),
    ],
    {"response_type": "token"},
    {"response_type": "code token"},
    {"response_type": "CODE"},
    {"response_type": ""},
    {"client_id": ""},
    {"client_id": "c" * 5000},
    {"client_id": "cli_doesnotexist"},
    {"redirect_uri": ""},
    {"redirect_uri": REDIRECT_URI + "#fragment"},
    {"redirect_uri": REDIRECT_URI + "/"},
    {"redirect_uri": REDIRECT_URI.upper()},
    {"redirect_uri": "https://client.example:443/callback"},
    {"redirect_uri": "https://client.example/callback%2F..%2Fevil"},
    {"redirect_uri": "https://client.example@evil.example/callback"},
    {"redirect_uri": "javascript:alert(1)//https://client.example/callback"},
    {"code_challenge": "x" * 129},
    {"code_challenge": "x" * 42},
    {"code_challenge": "{challenge}==="},
    {"code_challenge_method": "s256"},
    {"code_challenge_method": "S512"},
    {"scope": "keys " * 2000},
    {"scope": "openid"},
    {"scope": "read\x00write"},
    {"state": "s" * 8000},
    {"state": "a\r\nLocation: https://evil.example"},
    {"state": '"><script>alert(1)</script>'},
    {"state": "\x00"},
    {"prompt": "none"},
    {"request_uri": "https://evil.example/request.jwt"},
]


def _authorize_query(mutation: Any, client: Client, challenge: str) -> list[tuple[str, str]]:
    def fill(value: str) -> str:
        return (
            value.replace("{client}", client.client_id)
            .replace("{redirect}", client.redirect_uri)
            .replace("{challenge}", challenge)
        )

    if isinstance(mutation, list):
        return [(name, fill(value)) for name, value in mutation]
    changes = {k: fill(v) for k, v in mutation.items()}
    return list(_params(client, challenge, **changes).items())


class TestCorpusAuthorize:
    @pytest.mark.parametrize("signed_in", [False, True])
    def test_a_hostile_authorization_request_redirects_only_to_the_registered_uri_and_issues_nothing(
        self,
        browser: TestClient,
        person: Person,
        oauth_client: Client,
        database: Database,
        signed_in: bool,
    ) -> None:
        if signed_in:
            sign_in(browser, person)
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        for mutation in _AUTHORIZE_MUTATIONS:
            _, challenge = pkce()
            case = repr(mutation)[:120]
            response = browser.get(
                "/oauth/authorize", params=_authorize_query(mutation, oauth_client, challenge)
            )
            assert response.status_code in (200, 302, 303, 400), (
                case,
                response.status_code,
                response.text[:200],
            )
            if response.status_code == 302:
                location = response.headers["location"]
                assert location.startswith(REDIRECT_URI + "?"), (case, location)
                assert "error" in query_of(location) and "code" not in query_of(location), case
            else:
                assert response.headers["cache-control"] == "no-store", case
            if response.status_code == 303:
                assert _same_site(response.headers["location"]), case
            if response.status_code == 200:
                assert signed_in and "<script>" not in response.text, case
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before

    def test_a_tampered_consent_form_issues_no_code(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        sign_in(browser, person)
        _, challenge = pkce()
        page = browser.get("/oauth/authorize", params=_params(oauth_client, challenge))
        fields = {**_hidden_fields(page.text), "decision": "allow"}
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        tampered: list[dict[str, str | None]] = [
            {"code_challenge": None},
            {"code_challenge_method": "plain"},
            {"redirect_uri": "https://evil.example/callback"},
            {"client_id": "cli_doesnotexist"},
            {"response_type": None},
            {"scope": "admin"},
            {"state": None, "decision": "maybe"},
            {"decision": None},
            {"csrf": ""},
            {"csrf": "0" * 64},
        ]
        for changes in tampered:
            data = {k: v for k, v in {**fields, **changes}.items() if v is not None}
            response = browser.post("/oauth/authorize", data=data)
            if response.status_code == 302:
                assert response.headers["location"].startswith(REDIRECT_URI + "?"), changes
                assert "code" not in query_of(response.headers["location"]), changes
            else:
                assert response.status_code in (400, 403), (changes, response.status_code)
                assert "location" not in response.headers, changes
        # Each name given twice, the second a hostile value.
        for name in ("client_id", "redirect_uri", "code_challenge", "state", "scope", "response_type"):
            body = [*fields.items(), (name, "https://evil.example/")]
            response = browser.post("/oauth/authorize", content=urlencode(body).encode(), headers=FORM)
            assert response.status_code in (302, 400), (name, response.status_code)
            if response.status_code == 302:
                assert response.headers["location"].startswith(REDIRECT_URI + "?"), name
                assert "code" not in query_of(response.headers["location"]), name
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before

    def test_the_consent_page_escapes_the_client_name_and_the_state(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        with database.transaction() as session:
            row, _ = oauth.create_client(
                session,
                name='"><script>alert(1)</script><img src=x onerror=alert(2)>',
                redirect_uris=[REDIRECT_URI],
                now=now_ms(),
            )
        client = Client(row.id, None, REDIRECT_URI)
        sign_in(browser, person)
        _, challenge = pkce()
        page = browser.get(
            "/oauth/authorize",
            params=_params(client, challenge, state='"><script>alert(3)</script>', scope=None),
        )
        assert page.status_code == 200
        assert "<script" not in page.text and "<img" not in page.text
        for _, attributes in _elements(page.text):
            assert not any(name.startswith("on") for name, _ in attributes)
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


class TestCorpusToken:
    def test_a_hostile_token_request_is_an_rfc_6749_error_and_issues_nothing(
        self, browser: TestClient, person: Person, oauth_client: Client, database: Database
    ) -> None:
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        client = oauth_client.client_id
        for fields in [
            {},
            {"grant_type": ""},
            {"grant_type": "authorization_code"},
            {"grant_type": "authorization_code", "client_id": client},
            {"grant_type": "authorization_code", "client_id": client, "code": ""},
            {"grant_type": "authorization_code", "client_id": client, "code": "cvo_" + "A" * 36},
            {"grant_type": "authorization_code", "client_id": client, "code": "c" * 10_000},
            {
                "grant_type": "authorization_code",
                "client_id": client,
                "code": "x",
                "code_verifier": "v" * 10_000,
            },
            {
                "grant_type": "authorization_code",
                "client_id": client,
                "code": "x",
                "code_verifier": "\x00" * 50,
            },
            {"grant_type": "authorization_code", "client_id": client, "client_secret": "cvx_guess"},
            {"grant_type": "refresh_token", "client_id": client},
            {"grant_type": "refresh_token", "client_id": client, "refresh_token": "cvr_\x00"},
            {"grant_type": "refresh_token", "client_id": client, "refresh_token": "cva_" + "B" * 36},
            {"grant_type": "client_credentials", "client_id": client},
            {"grant_type": "password", "client_id": client, "username": "a", "password": "b"},
            {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "x"},
            {"grant_type": "implicit", "client_id": client},
            {"grant_type": "refresh_token\x00", "client_id": client},
        ]:
            response = browser.post("/oauth/token", data=fields)
            assert response.status_code in (400, 401), (fields, response.status_code, response.text[:200])
            assert "error" in response.json() and "access_token" not in response.json(), fields
            assert response.headers["cache-control"] == "no-store", fields
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before

    def test_a_token_request_in_the_query_string_is_not_read(
        self, browser: TestClient, oauth_client: Client
    ) -> None:
        response = browser.post(
            "/oauth/token",
            params={"grant_type": "refresh_token", "client_id": oauth_client.client_id},
            data={"unrelated": "1"},
        )
        assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"

    def test_concurrent_exchanges_of_one_code_give_exactly_one_success(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        verifier, challenge = pkce()
        sign_in(browser, person)
        page = browser.get("/oauth/authorize", params=_params(oauth_client, challenge))
        answer = browser.post("/oauth/authorize", data={**_hidden_fields(page.text), "decision": "allow"})
        code = query_of(answer.headers["location"])["code"]
        barrier = threading.Barrier(10)
        statuses: list[int] = []

        def exchange() -> None:
            barrier.wait()
            response = browser.post(
                "/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "client_id": oauth_client.client_id,
                    "code_verifier": verifier,
                },
            )
            statuses.append(response.status_code)

        threads = [threading.Thread(target=exchange) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200] + [400] * 9

    def test_another_clients_refresh_token_is_refused_and_left_alone(
        self,
        browser: TestClient,
        person: Person,
        oauth_client: Client,
        other_client: Client,
        database: Database,
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        stolen = _refresh(browser, other_client, tokens["refresh_token"])
        assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before
        assert _refresh(browser, oauth_client, tokens["refresh_token"]).status_code == 200


class TestCorpusRevoke:
    def test_a_hostile_revocation_changes_nothing(
        self,
        browser: TestClient,
        person: Person,
        oauth_client: Client,
        other_client: Client,
        database: Database,
    ) -> None:
        tokens = _tokens(browser, person, oauth_client)
        before = _state(database, client_id=oauth_client.client_id, account_id=person.account_id)
        mine, other = oauth_client.client_id, other_client.client_id
        refresh, access = tokens["refresh_token"], tokens["access_token"]
        for fields in [
            {},
            {"client_id": mine},
            {"token": refresh},
            {"token": refresh, "client_id": other},
            {"token": access, "client_id": other},
            {"token": refresh, "client_id": "cli_doesnotexist"},
            {"token": refresh, "client_id": mine, "client_secret": "cvx_guess"},
            # (an unknown token_type_hint is ignored, RFC 7009 §2.1: test_authorize covers it)
            {"token": "\x00", "client_id": mine},
            {"token": "t" * 10_000, "client_id": mine},
            {"token": "cvr_" + "A" * 36, "client_id": mine},
        ]:
            response = browser.post("/oauth/revoke", data=fields)
            assert response.status_code in (200, 400, 401), (list(fields), response.status_code)
        assert _state(database, client_id=oauth_client.client_id, account_id=person.account_id) == before
        assert _refresh(browser, oauth_client, refresh).status_code == 200


class TestCorpusCardPage:
    def test_a_hostile_card_id_is_a_same_site_redirect_or_a_404(
        self, browser: TestClient, person: Person
    ) -> None:
        hostile = [
            "%00",
            "%FF%FE",
            "x" * 5000,
            "%2e%2e",
            "crd_%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",
            "%E2%80%AE",
            "crd_" + "A" * 60,
            "%5C%5Cevil.example",
            "%0d%0aLocation:%20https:%2F%2Fevil.example",
        ]
        for card_id in hostile:
            signed_out = browser.get(f"/cards/{card_id}")
            assert signed_out.status_code in (303, 404), (card_id, signed_out.status_code)
            if signed_out.status_code == 303:
                location = signed_out.headers["location"]
                assert _same_site(location) and _same_site(query_of(location).get("next", "/")), card_id
        sign_in(browser, person)
        for card_id in hostile:
            signed_in = browser.get(f"/cards/{card_id}")
            assert signed_in.status_code == 404, (card_id, signed_in.status_code)
            assert "<script>" not in signed_in.text, card_id

    def test_every_card_field_is_shown_as_text(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        hostile = '"><script>alert(1)</script><img src=x onerror=alert(1)>'
        with database.transaction() as session:
            card = editing.add_card(
                session,
                account_id=person.account_id,
                url="https://example.com/a?b=%22%3E%3Cscript%3E",
                notes=hostile,
                tags=["<script>alert(1)</script>", '" onmouseover="alert(1)'],
            ).card
            row = session.scalar(select(Card).where(Card.id == card.id))
            assert row is not None
            row.metadata_title = hostile
            row.metadata_description = hostile
            row.ai_summary = hostile
            folder = folders.create_folder(session, account_id=person.account_id, name=hostile)
            folders.add_cards(session, account_id=person.account_id, folder_id=folder.id, card_ids=[card.id])
            card_id = card.id
        sign_in(browser, person)
        page = browser.get(f"/cards/{card_id}")
        assert page.status_code == 200
        assert "<script" not in page.text
        for tag, attributes in _elements(page.text):
            assert tag not in ("script", "iframe", "object", "embed", "style"), tag
            for name, value in attributes:
                assert not name.startswith("on"), (tag, name)
                if name in ("href", "src", "action"):
                    assert (value or "").startswith(("https://", "/", "data:image/svg+xml,")), value

    def test_another_accounts_card_is_never_shown_whatever_the_id_case(
        self, browser: TestClient, make_person: Callable[[], Person], database: Database
    ) -> None:
        owner, other = make_person(), make_person()
        with database.transaction() as session:
            card_id = editing.add_card(session, account_id=owner.account_id, content="owner only").card.id
        sign_in(browser, other)
        for variant in (card_id, card_id.upper(), card_id + "%00", card_id + "%20"):
            response = browser.get(f"/cards/{variant}")
            _assert_no_server_error(response)
            assert response.status_code == 404 and "owner only" not in response.text


class TestCorpusHeaders:
    def test_pages_and_redirects_cannot_be_framed_cached_or_leak_the_referrer(
        self, browser: TestClient, person: Person, oauth_client: Client
    ) -> None:
        _, challenge = pkce()
        page = browser.get("/sign-in")
        redirect = browser.get("/oauth/authorize", params=_params(oauth_client, challenge))
        error = browser.get("/oauth/authorize", params={"client_id": "nope"})
        for response in (page, redirect, error):
            assert response.headers["x-frame-options"] == "DENY"
            assert response.headers["cache-control"] == "no-store"
            assert response.headers["referrer-policy"] == "same-origin"
        tokens = _tokens(browser, person, oauth_client)
        refreshed = _refresh(browser, oauth_client, tokens["refresh_token"])
        assert refreshed.headers["cache-control"] == "no-store" and refreshed.headers["pragma"] == "no-cache"
