"""Browser sign-in end to end, in real headless Chromium against `cardvault serve`: sign in,
consent, the redirect with a code, the token exchange, API calls with the token, refresh, reuse
detection, sign-out and the card page; and the attacks: CSRF, open redirect, PKCE downgrade,
code replay and password guessing."""

from __future__ import annotations

import base64
import hashlib
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from harness.servers import BIN, PageServer, cli, page_server, server_env, serving

PASSWORD = "a browser-typed passphrase"
CALLBACK_PAGE = (
    200,
    {"Content-Type": "text/html"},
    b"<!doctype html><title>App</title><p>Callback received</p>",
)


@dataclass
class Site:
    base: str  # the server's origin, e.g. http://127.0.0.1:8123
    client_id: str
    redirect_uri: str
    app: PageServer  # the client app's own pages (another site: localhost, not 127.0.0.1)
    env: dict[str, str]

    def make_account(self, name: str) -> str:
        """An account that signs in with ``<name>@example.com`` and PASSWORD; its email."""
        email = f"{name}@example.com"
        subprocess.run(
            [str(BIN / "cardvault"), "accounts", "create", name, "--email", email],
            env=self.env,
            input=PASSWORD + "\n",
            text=True,
            check=True,
            capture_output=True,
        )
        return email


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("browser-site")
    env = {
        **server_env(tmp),
        "CARDVAULT_PASSWORD_TIME_COST": "1",
        "CARDVAULT_PASSWORD_MEMORY_KIB": "8192",
        "CARDVAULT_RATE_LIMIT_SIGN_IN_ACCOUNT": "3/15 minutes",
        "CARDVAULT_RATE_LIMIT_SIGN_IN_ADDRESS": "30/15 minutes",
    }
    cli(env, "migrate")
    with page_server() as app:
        app.routes["/callback"] = CALLBACK_PAGE
        redirect_uri = app.url("/callback")
        printed = cli(env, "clients", "create", "Notes App", "--redirect-uri", redirect_uri)
        client_id = printed.removeprefix("client_id: ").strip()
        with serving(env, tmp / "server.log") as api_base:
            yield Site(api_base.removesuffix("/v1"), client_id, redirect_uri, app, env)


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
        b"="
    ).decode()


def _authorize_url(site: Site, challenge: str | None, **changes: str | None) -> str:
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": site.client_id,
        "redirect_uri": site.redirect_uri,
        "scope": "read write",
        "state": "browser-state",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **changes,
    }
    return f"{site.base}/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})


def _query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def _sign_in(page: Page, email: str, password: str = PASSWORD) -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def _code_through_the_browser(page: Page, site: Site, email: str | None, challenge: str) -> str:
    """Start at the app's link, sign in if asked, allow, and return the code the app got."""
    page.goto(_authorize_url(site, challenge))
    if email is not None:
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        _sign_in(page, email)
    expect(page.get_by_role("heading", name="Allow Notes App?")).to_be_visible()
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(f"{site.redirect_uri}?**")
    query = _query(page.url)
    assert query["state"] == "browser-state" and query["iss"] == site.base
    return query["code"]


def _exchange(site: Site, code: str, verifier: str | None) -> httpx.Response:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": site.redirect_uri,
        "client_id": site.client_id,
    }
    if verifier is not None:
        data["code_verifier"] = verifier
    return httpx.post(f"{site.base}/oauth/token", data=data)


def _refresh(site: Site, refresh_token: str) -> httpx.Response:
    return httpx.post(
        f"{site.base}/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": site.client_id},
    )


def _api(
    site: Site, token: str, method: str = "GET", path: str = "/v1/cards", **kwargs: object
) -> httpx.Response:
    return httpx.request(method, f"{site.base}{path}", headers={"Authorization": f"Bearer {token}"}, **kwargs)  # type: ignore[arg-type]


def _no_dialogs(page: Page) -> list[str]:
    """Record any alert, confirm or prompt a script opens (none may)."""
    opened: list[str] = []
    page.on("dialog", lambda dialog: (opened.append(dialog.message), dialog.dismiss()))
    return opened


def test_the_whole_flow_sign_in_consent_tokens_refresh_reuse_sign_out_and_the_card_page(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    email = site.make_account("flow")
    page = context.new_page()
    dialogs = _no_dialogs(page)
    verifier, challenge = _pkce()
    code = _code_through_the_browser(page, site, email, challenge)
    expect(page.get_by_text("Callback received")).to_be_visible()

    exchanged = _exchange(site, code, verifier)
    assert exchanged.status_code == 200, exchanged.text
    tokens = exchanged.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["access_token"].startswith("cva_") and tokens["refresh_token"].startswith("cvr_")

    created = _api(
        site,
        tokens["access_token"],
        "POST",
        json={
            "content": "**Bold words**\n\n<img src=x onerror=alert(1)>\n\n[click me](javascript:alert(2))",
            "tags": ["browser"],
        },
    )
    assert created.status_code == 200, created.text
    app_url = created.json()["appUrl"]
    assert app_url.startswith(site.base + "/cards/")

    page.goto(app_url)  # signed in already: the card itself
    assert page.locator(".content strong").inner_text() == "Bold words"
    assert page.locator(".content img").count() == 0
    assert page.locator(".content a[href^='javascript']").count() == 0
    expect(page.get_by_text("browser", exact=True)).to_be_visible()
    page.screenshot(path=str(tmp_path / "card.png"))

    renewed = _refresh(site, tokens["refresh_token"])
    assert renewed.status_code == 200 and renewed.json()["refresh_token"] != tokens["refresh_token"]
    assert _api(site, renewed.json()["access_token"]).status_code == 200

    reuse = _refresh(site, tokens["refresh_token"])  # the spent one: someone copied it
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    assert _refresh(site, renewed.json()["refresh_token"]).status_code == 400  # the family is revoked

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{site.base}/sign-in")
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()  # signed out: the sign-in page
    assert "Bold words" not in page.content()
    _sign_in(page, email)
    page.wait_for_url(app_url)
    assert page.locator(".content strong").inner_text() == "Bold words"
    assert dialogs == []


def test_the_consent_form_cannot_be_posted_from_another_site(site: Site, context: BrowserContext) -> None:
    email = site.make_account("csrf")
    page = context.new_page()
    _, challenge = _pkce()
    page.goto(_authorize_url(site, challenge))
    _sign_in(page, email)
    expect(page.get_by_role("heading", name="Allow Notes App?")).to_be_visible()
    fields = "".join(
        f'<input type="hidden" name="{name}" value="{value}">'
        for name, value in _query(_authorize_url(site, challenge)).items()
    )
    site.app.routes["/prize"] = (
        200,
        {"Content-Type": "text/html"},
        f'<!doctype html><form method="post" action="{site.base}/oauth/authorize">{fields}'
        '<input type="hidden" name="decision" value="allow">'
        "<button>Claim your prize</button></form>".encode(),
    )
    callbacks = site.app.hits.get("/callback", 0)
    page.goto(site.app.url("/prize"))
    with page.expect_response(f"{site.base}/oauth/authorize") as answered:
        page.get_by_role("button", name="Claim your prize").click()
    assert answered.value.status == 403
    assert page.get_by_role("alert").inner_text().startswith("This form expired or came from another site")
    assert site.app.hits.get("/callback", 0) == callbacks  # no code went anywhere


def test_the_sign_in_form_cannot_be_posted_from_another_site(site: Site, context: BrowserContext) -> None:
    email = site.make_account("logincsrf")
    site.app.routes["/login-trap"] = (
        200,
        {"Content-Type": "text/html"},
        f'<!doctype html><form method="post" action="{site.base}/sign-in">'
        f'<input type="hidden" name="email" value="{email}">'
        f'<input type="hidden" name="password" value="{PASSWORD}">'
        "<button>Continue</button></form>".encode(),
    )
    page = context.new_page()
    page.goto(site.app.url("/login-trap"))
    with page.expect_response(f"{site.base}/sign-in") as answered:
        page.get_by_role("button", name="Continue").click()
    assert answered.value.status == 403
    assert not any("cv_session" in cookie["name"] for cookie in context.cookies())


def test_an_unregistered_redirect_uri_shows_an_error_and_never_leaves_the_site(
    site: Site, context: BrowserContext
) -> None:
    email = site.make_account("redirect")
    page = context.new_page()
    _, challenge = _pkce()
    page.goto(_authorize_url(site, challenge))
    _sign_in(page, email)
    for evil in (site.app.url("/elsewhere"), "https://evil.example/callback", site.redirect_uri + "/.."):
        response = page.goto(_authorize_url(site, challenge, redirect_uri=evil))
        assert response is not None and response.status == 400
        assert page.url.startswith(site.base + "/oauth/authorize")
        expect(page.get_by_role("heading", name="This sign-in link does not work")).to_be_visible()


def test_sign_in_never_follows_a_next_link_off_the_site(site: Site, context: BrowserContext) -> None:
    email = site.make_account("nextlink")
    page = context.new_page()
    page.goto(f"{site.base}/sign-in?next=" + urlencode({"x": "//evil.example/steal"})[2:])
    _sign_in(page, email)
    page.wait_for_url(f"{site.base}/sign-in")
    expect(page.get_by_role("heading", name="Signed in")).to_be_visible()


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"code_challenge_method": "plain"}, "code_challenge_method must be S256"),
        ({"code_challenge_method": None}, "code_challenge_method must be S256"),
        ({"code_challenge": None, "code_challenge_method": None}, "PKCE is required"),
    ],
)
def test_a_pkce_downgrade_is_refused(
    site: Site, context: BrowserContext, changes: dict[str, str | None], expected: str
) -> None:
    page = context.new_page()
    _, challenge = _pkce()
    # Answered at once, before anyone signs in: the app learns its request was wrong.
    page.goto(_authorize_url(site, challenge, **changes))
    page.wait_for_url(f"{site.redirect_uri}?**")
    query = _query(page.url)
    assert query["error"] == "invalid_request" and expected in query["error_description"]
    assert query["state"] == "browser-state" and "code" not in query


def test_a_code_without_its_verifier_is_refused(site: Site, context: BrowserContext) -> None:
    email = site.make_account("noverifier")
    page = context.new_page()
    _, challenge = _pkce()
    code = _code_through_the_browser(page, site, email, challenge)
    refused = _exchange(site, code, None)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"


def test_a_replayed_code_is_refused_and_revokes_the_tokens_it_gave(
    site: Site, context: BrowserContext
) -> None:
    email = site.make_account("replay")
    page = context.new_page()
    verifier, challenge = _pkce()
    code = _code_through_the_browser(page, site, email, challenge)
    first = _exchange(site, code, verifier)
    assert first.status_code == 200
    replay = _exchange(site, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    refused = _api(site, first.json()["access_token"])
    assert refused.status_code == 401 and refused.json()["code"] == "INVALID_TOKEN"
    assert refused.headers["www-authenticate"] == 'Bearer realm="cardvault", error="invalid_token"'


def test_guessing_passwords_locks_the_account_for_the_window(site: Site, context: BrowserContext) -> None:
    email = site.make_account("guessed")
    page = context.new_page()
    page.goto(f"{site.base}/sign-in")
    for guess in ("password123456", "letmein-letmein", "hunter2hunter2"):
        with page.expect_response(f"{site.base}/sign-in") as answered:
            _sign_in(page, email, guess)
        assert answered.value.status == 401
        assert page.get_by_role("alert").inner_text().startswith("That email and password do not match")
    with page.expect_response(f"{site.base}/sign-in") as answered:
        _sign_in(page, email)  # the right password, after the limit
    assert answered.value.status == 429
    assert page.get_by_role("alert").inner_text() == "Too many sign-in attempts. Try again in 15 minutes."
    assert not any("cv_session" in cookie["name"] for cookie in context.cookies())


_CONTRAST = """
([selector, backgroundSelector]) => {
  const channel = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const luminance = (rgb) => {
    const [r, g, b] = rgb.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  };
  const fg = getComputedStyle(document.querySelector(selector)).color;
  const bg = getComputedStyle(document.querySelector(backgroundSelector)).backgroundColor;
  const [a, b] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_sign_in_works_from_the_keyboard_alone_with_readable_contrast(
    site: Site, context: BrowserContext, scheme: str
) -> None:
    email = site.make_account(f"keyboard{scheme}")
    page = context.new_page()
    page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
    page.goto(f"{site.base}/sign-in")
    # WCAG AA: 4.5:1 for text, on the page and on the button.
    assert page.evaluate(_CONTRAST, ["label[for=email]", "body"]) >= 4.5
    assert page.evaluate(_CONTRAST, ["button[type=submit]", "button[type=submit]"]) >= 4.5
    expect(page.get_by_label("Email")).to_be_focused()  # the first field has the focus
    page.keyboard.type(email)
    page.keyboard.press("Tab")
    expect(page.get_by_label("Password")).to_be_focused()
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Sign in")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Signed in")).to_be_visible()


def test_swagger_ui_runs_under_its_own_policy(site: Site, context: BrowserContext) -> None:
    """/v1/ui/ renders the operations and its Authorize dialog under its strict policy, and the
    browser reports no blocked script, style or request."""
    page = context.new_page()
    blocked: list[str] = []
    page.on(
        "console",
        lambda message: blocked.append(message.text) if "Content Security Policy" in message.text else None,
    )
    page.goto(f"{site.base}/v1/ui/")
    expect(page.get_by_text("Create a card").first).to_be_visible()
    page.get_by_role("button", name="Authorize").first.click()
    expect(page.get_by_text("Available authorizations")).to_be_visible()
    assert blocked == []


def test_the_printed_sign_in_link_signs_in_only_when_its_button_is_pressed(
    site: Site, context: BrowserContext
) -> None:
    link = (Path(site.env["CARDVAULT_DATA_DIR"]) / "sign_in_link").read_text().strip()
    page = context.new_page()
    for _ in range(2):  # a previewer's look, then the person's: neither spends it
        response = page.goto(link)
        assert response is not None and response.status == 200
        assert not any("cv_session" in cookie["name"] for cookie in context.cookies())
    with page.expect_response(f"{site.base}/sign-in/link") as answered:
        page.get_by_role("button", name="Sign in").click()
    assert answered.value.status == 303
    expect(page.get_by_role("heading", name="Signed in")).to_be_visible()
    assert any("cv_session" in cookie["name"] for cookie in context.cookies())
    page.goto(link)
    page.get_by_role("button", name="Sign in").click()  # once
    expect(page.get_by_role("heading", name="Sign-in link not valid")).to_be_visible()
