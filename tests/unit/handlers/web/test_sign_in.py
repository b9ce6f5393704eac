"""The sign-in page: CSRF, the session cookie, safe redirects, sign-in attempt limits, sign-out."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from starlette.testclient import TestClient

from cardvault.domain.auth import web_sessions
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import WebSession
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers.oauth import forget_ended_credentials
from harness.servers import redis_server
from tests.conftest import Api, app_env
from tests.unit.handlers.web.conftest import PUBLIC_URL, Person, csrf_of, sign_in


def _post(browser: TestClient, person: Person, *, password: str | None = None, **extra: str):  # type: ignore[no-untyped-def]
    page = browser.get("/sign-in")
    data = {"csrf": csrf_of(page.text), "email": person.email, "password": password or person.password}
    return browser.post("/sign-in", data={**data, **extra})


class TestSignInPage:
    def test_is_an_accessible_form_with_labels_and_no_script(self, browser: TestClient) -> None:
        page = browser.get("/sign-in")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert '<html lang="en">' in page.text
        assert '<label for="email">Email</label>' in page.text
        assert '<label for="password">Password</label>' in page.text
        assert 'autocomplete="current-password"' in page.text
        assert "<script" not in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["cache-control"] == "no-store"

    def test_sets_a_csrf_cookie_that_is_httponly_secure_and_host_bound(self, browser: TestClient) -> None:
        page = browser.get("/sign-in")
        cookie = page.headers["set-cookie"]
        assert cookie.startswith("__Host-cv_csrf=")
        assert "HttpOnly" in cookie and "Secure" in cookie and "Path=/" in cookie
        assert "samesite=lax" in cookie.lower()

    def test_serves_its_stylesheet_from_the_app(self, browser: TestClient) -> None:
        css = browser.get("/static/cardvault.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert ":focus-visible" in css.text


class TestSignIn:
    def test_starts_a_session_with_an_httponly_secure_lax_cookie(
        self, browser: TestClient, person: Person
    ) -> None:
        response = _post(browser, person, next="/cards/crd_x")
        assert response.status_code == 303
        assert response.headers["location"] == "/cards/crd_x"
        cookie = next(c for c in response.headers.get_list("set-cookie") if "cv_session" in c)
        assert cookie.startswith("__Host-cv_session=cvs_")
        assert "HttpOnly" in cookie and "Secure" in cookie and "samesite=lax" in cookie.lower()
        assert "Max-Age=604800" in cookie
        page = browser.get("/sign-in")
        assert "You are signed in as" in page.text and person.name in page.text

    def test_email_is_compared_ignoring_case(self, browser: TestClient, person: Person) -> None:
        page = browser.get("/sign-in")
        response = browser.post(
            "/sign-in",
            data={"csrf": csrf_of(page.text), "email": person.email.upper(), "password": person.password},
        )
        assert response.status_code == 303

    def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(
        self, browser: TestClient, person: Person
    ) -> None:
        wrong = _post(browser, person, password="not the password at all")
        unknown = _post(browser, Person("", "", "nobody@example.com", person.password))
        assert wrong.status_code == unknown.status_code == 401
        message = "That email and password do not match an account."
        assert message in wrong.text and message in unknown.text
        assert "cv_session" not in (wrong.headers.get("set-cookie") or "")

    def test_refuses_a_form_without_the_csrf_token(self, browser: TestClient, person: Person) -> None:
        browser.get("/sign-in")
        response = browser.post("/sign-in", data={"email": person.email, "password": person.password})
        assert response.status_code == 403
        assert "came from another site" in response.text
        assert "cv_session" not in (response.headers.get("set-cookie") or "")

    def test_refuses_a_token_made_for_another_browser(
        self, settings: Settings, database: Database, person: Person
    ) -> None:
        app = create_app(settings, database)
        with (
            TestClient(app, base_url=PUBLIC_URL, follow_redirects=False) as attacker,
            TestClient(app, base_url=PUBLIC_URL, follow_redirects=False) as victim,
        ):
            token = csrf_of(attacker.get("/sign-in").text)  # the attacker's own page
            victim.get("/sign-in")
            response = victim.post(
                "/sign-in", data={"csrf": token, "email": person.email, "password": person.password}
            )
        assert response.status_code == 403

    def test_refuses_a_post_from_another_origin(self, browser: TestClient, person: Person) -> None:
        page = browser.get("/sign-in")
        response = browser.post(
            "/sign-in",
            data={"csrf": csrf_of(page.text), "email": person.email, "password": person.password},
            headers={"Origin": "https://evil.example"},
        )
        assert response.status_code == 403

    @pytest.mark.parametrize(
        "next_path",
        [
            "https://evil.example/",
            "//evil.example/path",
            "/\\evil.example",
            "javascript:alert(1)",
            "/ok\r\nLocation: https://evil.example",
            "evil.example",
        ],
    )
    def test_never_redirects_off_the_site(self, browser: TestClient, person: Person, next_path: str) -> None:
        response = _post(browser, person, next=next_path)
        assert response.status_code == 303
        assert response.headers["location"] == "/sign-in"

    def test_refuses_a_form_that_is_not_urlencoded(self, browser: TestClient) -> None:
        response = browser.post("/sign-in", json={"email": "a@b.c"})
        assert response.status_code == 400

    def test_a_session_cookie_never_authenticates_the_api(self, browser: TestClient, person: Person) -> None:
        sign_in(browser, person)
        response = browser.get("/v1/cards")
        assert response.status_code == 401
        assert response.json()["code"] == "UNAUTHORIZED"


class TestSignInLimit:
    @pytest.fixture
    def strict_browser(self, tmp_path: Path, database: Database) -> TestClient:
        env = {
            **app_env(tmp_path, database),
            "CARDVAULT_RATE_LIMIT_SIGN_IN_ACCOUNT": "3/15 minutes",
            "CARDVAULT_RATE_LIMIT_SIGN_IN_ADDRESS": "5/15 minutes",
        }
        with TestClient(
            create_app(Settings.from_env(env), database), base_url=PUBLIC_URL, follow_redirects=False
        ) as client:
            yield client  # type: ignore[misc]

    def test_an_account_is_locked_for_the_window_after_its_attempts_even_with_the_right_password(
        self, strict_browser: TestClient, person: Person
    ) -> None:
        for _ in range(3):
            assert _post(strict_browser, person, password="wrong password!!").status_code == 401
        refused = _post(strict_browser, person)  # the right password, too late
        assert refused.status_code == 429
        assert "Too many sign-in attempts. Try again in 15 minutes." in refused.text
        assert 890 <= int(refused.headers["retry-after"]) <= 900

    def test_an_address_is_limited_across_accounts(
        self, strict_browser: TestClient, make_person: Callable[[], Person]
    ) -> None:
        people = [make_person() for _ in range(3)]
        answers = [
            _post(strict_browser, someone, password="wrong password!!").status_code
            for someone in people
            for _ in range(2)
        ]
        assert answers == [401] * 5 + [429]
        assert _post(strict_browser, make_person()).status_code == 429

    def test_every_attempt_counts_the_right_password_too(
        self, strict_browser: TestClient, person: Person
    ) -> None:
        # Counted before the password is checked: the only way guesses sent at once cannot pass.
        answers = [_post(strict_browser, person).status_code for _ in range(4)]
        assert answers == [303, 303, 303, 429]


class TestSignInBudget:
    def test_the_whole_services_budget_holds_whatever_the_accounts(
        self, tmp_path: Path, database: Database, make_person: Callable[[], Person]
    ) -> None:
        env = {**app_env(tmp_path, database), "CARDVAULT_RATE_LIMIT_SIGN_IN_ALL": "3/15 minutes"}
        app = create_app(Settings.from_env(env), database)
        with TestClient(app, base_url=PUBLIC_URL, follow_redirects=False) as client:
            people = [make_person() for _ in range(4)]
            answers = [_post(client, someone, password="wrong password!!").status_code for someone in people]
        assert answers == [401, 401, 401, 429]


class TestSignInLimitWithRedisDown:
    def test_the_tenth_guess_is_the_last_even_with_redis_stopped(
        self, tmp_path: Path, database: Database, person: Person
    ) -> None:
        # The default limits (10 per email in 15 minutes), kept in a Redis of this test's own.
        with redis_server(tmp_path) as (url, redis_process):
            settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_REDIS_URL": url})
            app = create_app(settings, database)
            with TestClient(app, base_url=PUBLIC_URL, follow_redirects=False) as client:
                redis_process.kill()
                redis_process.wait()
                answers = [_post(client, person, password="wrong password!!").status_code for _ in range(11)]
                assert answers == [401] * 10 + [429]
                assert _post(client, person).status_code == 429  # the right password, too late


class TestSignOut:
    def test_ends_the_session_and_clears_the_cookie(self, browser: TestClient, person: Person) -> None:
        sign_in(browser, person)
        page = browser.get("/sign-in")
        cookie = browser.cookies.get("__Host-cv_session")
        response = browser.post("/sign-out", data={"csrf": csrf_of(page.text)})
        assert response.status_code == 303 and response.headers["location"] == "/sign-in"
        assert re.search(r"__Host-cv_session=\"?\"?;", response.headers["set-cookie"])
        # The old cookie no longer signs anyone in, even if a browser kept it.
        browser.cookies.set("__Host-cv_session", cookie or "", domain="app.cardvault.test")
        assert "Sign in</h1>" in browser.get("/sign-in").text

    def test_refuses_a_cross_site_sign_out(self, browser: TestClient, person: Person) -> None:
        sign_in(browser, person)
        response = browser.post("/sign-out", data={})
        assert response.status_code == 403
        assert "You are signed in as" in browser.get("/sign-in").text


class TestSessionEnd:
    def test_a_session_ends_after_a_week_and_the_sweeper_deletes_it(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        sign_in(browser, person)
        with database.transaction() as session:
            session.execute(
                update(WebSession)
                .where(WebSession.account_id == person.account_id)
                .values(expires_at=now_ms() - 1)
            )
        assert "Sign in</h1>" in browser.get("/sign-in").text
        forget_ended_credentials()
        forget_ended_credentials()  # a second run finds nothing left
        with database.transaction(write=False) as session:
            left = session.scalar(
                select(func.count()).select_from(WebSession).where(WebSession.account_id == person.account_id)
            )
        assert left == 0


class TestSignInLink:
    def _link(self, database: Database, account_id: str) -> str:
        with database.transaction() as session:
            return web_sessions.issue_sign_in_link(session, account_id=account_id, now=now_ms())

    def _spend(self, browser: TestClient, token: str):  # type: ignore[no-untyped-def]
        """Open the link's page and press its button, as a person does."""
        page = browser.get(f"/sign-in/link?token={token}")
        assert page.status_code == 200, page.text
        return browser.post("/sign-in/link", data={"csrf": csrf_of(page.text), "token": token})

    def test_signs_the_browser_in_once_and_the_card_pages_open(
        self, browser: TestClient, database: Database, api: Api
    ) -> None:
        card = api.post("/v1/cards", json={"content": "A note to open"}).json()
        token = self._link(database, api.account_id)
        opened = self._spend(browser, token)
        assert opened.status_code == 303 and opened.headers["location"] == "/sign-in"
        cookie = next(v for k, v in opened.headers.multi_items() if v.startswith("__Host-cv_session="))
        assert (
            cookie.startswith("__Host-cv_session=cvs_") and "HttpOnly" in cookie and "SameSite=lax" in cookie
        )
        page = browser.get(card["appUrl"].removeprefix(PUBLIC_URL))
        assert page.status_code == 200 and "A note to open" in page.text
        browser.cookies.clear()
        again = self._spend(browser, token)
        assert again.status_code == 400 and "cv_session" not in again.headers.get("set-cookie", "")
        assert "used already" in again.text

    def test_opening_it_with_get_or_head_spends_nothing(
        self, browser: TestClient, database: Database, api: Api
    ) -> None:
        token = self._link(database, api.account_id)
        for _ in range(3):  # a mail scanner, a link previewer, the person's browser
            assert browser.head(f"/sign-in/link?token={token}").status_code == 200
            shown = browser.get(f"/sign-in/link?token={token}")
            assert shown.status_code == 200 and '<form method="post" action="/sign-in/link"' in shown.text
            assert "cv_session" not in shown.headers.get("set-cookie", "")
        assert self._spend(browser, token).status_code == 303  # still there for the person

    def test_a_post_without_the_pages_csrf_token_or_from_another_site_spends_nothing(
        self, browser: TestClient, database: Database, api: Api
    ) -> None:
        token = self._link(database, api.account_id)
        csrf = csrf_of(browser.get(f"/sign-in/link?token={token}").text)
        forged = [
            ({"token": token}, {}),
            ({"token": token, "csrf": "0" * 64}, {}),
            ({"token": token, "csrf": csrf}, {"Origin": "https://evil.example"}),
        ]
        for data, headers in forged:
            refused = browser.post("/sign-in/link", data=data, headers=headers)
            assert refused.status_code == 403 and "cv_session" not in refused.headers.get("set-cookie", "")
        assert self._spend(browser, token).status_code == 303

    @pytest.mark.parametrize("token", ["", "cvl_short", "cvs_" + "a" * 36])
    def test_anything_else_is_refused_with_a_page(self, browser: TestClient, token: str) -> None:
        refused = browser.get("/sign-in/link", params={"token": token})
        assert refused.status_code == 400 and refused.headers["content-type"].startswith("text/html")
        csrf = csrf_of(browser.get("/sign-in").text)
        posted = browser.post("/sign-in/link", data={"csrf": csrf, "token": token})
        assert posted.status_code == 400 and "not valid" in posted.text
