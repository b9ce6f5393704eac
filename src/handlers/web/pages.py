"""What every page shares: templates, the session and CSRF cookies, form bodies, safe
redirects, and the headers that keep a page from being framed, cached or scripted."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio.to_thread
import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from cardvault.domain.auth import web_sessions
from cardvault.domain.clock import now_ms
from cardvault.handlers.http import runtime

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
MAX_FORM_BYTES = 16 * 1024  # a sign-in or consent form is a few hundred bytes
MAX_FORM_FIELDS = 40
_CSRF_FIELD = "csrf"

# No script runs on these pages; styles come from our own file; images may come from the blob
# store's signed URLs (another origin on S3); forms post only to us; no page can be framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' https: data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # with no-referrer a browser posts forms with Origin: null
    "Cache-Control": "no-store",
}

_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,  # every value is escaped unless a template says it is markup
    undefined=jinja2.StrictUndefined,
)


class FormRefused(Exception):
    """A form body that is too large, of another type, or not UTF-8."""


def _is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")


def cookie_name(base: str) -> str:
    """``__Host-`` names (bound to this origin, Secure, path /) outside loopback."""
    return base if _is_loopback_url(runtime.current().settings.public_url) else f"__Host-{base}"


def set_cookie(response: Response, base: str, value: str, *, max_age: int | None, same_site: str) -> None:
    """Set one of our cookies: HttpOnly always, Secure outside loopback."""
    secure = not _is_loopback_url(runtime.current().settings.public_url)
    response.set_cookie(
        cookie_name(base),
        value,
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=True,
        samesite=same_site,  # type: ignore[arg-type]
    )


def clear_cookie(response: Response, base: str) -> None:
    secure = not _is_loopback_url(runtime.current().settings.public_url)
    response.delete_cookie(cookie_name(base), path="/", secure=secure, httponly=True, samesite="lax")


def render(
    template: str,
    status: int = 200,
    *,
    headers: Mapping[str, str] | None = None,
    form_target: str | None = None,
    **values: Any,
) -> HTMLResponse:
    """A page from its template, with the page headers. ``form_target``: a URL the page's form
    may end up at through a redirect (browsers hold redirects after a form to form-action)."""
    body = _environment.get_template(template).render(**values)
    page_headers = dict(_PAGE_HEADERS)
    source = _csp_source(form_target) if form_target else None
    if source:
        page_headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.replace(
            "form-action 'self'", f"form-action 'self' {source}"
        )
    return HTMLResponse(body, status_code=status, headers={**page_headers, **(headers or {})})


_CSP_SOURCE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(//[A-Za-z0-9.\-\[\]:]+)?")


def _csp_source(url: str) -> str | None:
    """The CSP source naming a URL's origin (or, for an app's own scheme, the scheme)."""
    parts = urlsplit(url)
    source = f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else f"{parts.scheme}:"
    return source if _CSP_SOURCE.fullmatch(source) else None


def redirect(location: str, *, headers: Mapping[str, str] | None = None) -> RedirectResponse:
    """303 See Other: the browser follows with a GET whatever the form's method was."""
    return RedirectResponse(location, status_code=303, headers={**_PAGE_HEADERS, **(headers or {})})


def safe_next(value: str | None, default: str = "/sign-in") -> str:
    """A path on this site to return to after signing in; anything else (another host, a
    scheme, ``//host``, a backslash some browsers read as a slash) becomes ``default``."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return default
    if "\\" in value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value) or len(value) > 4000:
        return default
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return default
    return value


async def read_form(request: Request) -> list[tuple[str, str]]:
    """A urlencoded form body, bounded in size and fields, as ordered pairs (repeats kept)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != (
        "application/x-www-form-urlencoded"
    ):
        raise FormRefused("The body must be application/x-www-form-urlencoded.")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise FormRefused("The form is too large.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormRefused("The form is too large.")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS, errors="strict"
        )
    except (UnicodeDecodeError, ValueError):
        raise FormRefused("The form is not valid UTF-8 urlencoded data.") from None
    if any("\x00" in name or "\x00" in value for name, value in pairs):
        raise FormRefused("The form holds a NUL character.")
    return pairs


def first(pairs: list[tuple[str, str]], name: str) -> str:
    """The first value of a form field ('' when absent)."""
    return next((value for key, value in pairs if key == name), "")


def csrf_token(request: Request) -> tuple[str, str | None]:
    """The form token for this browser, and a new CSRF cookie value to set when it had none.

    The cookie holds a random value; the form carries its HMAC under the server's secret. A
    page on another site can neither read the cookie nor compute the HMAC, so it cannot forge
    the form (this also covers the sign-in form, before any session exists)."""
    cookie = request.cookies.get(cookie_name("cv_csrf"), "")
    fresh = None
    if len(cookie) != 43:
        cookie = fresh = secrets.token_urlsafe(32)
    return _csrf_mac(cookie), fresh


def _csrf_mac(cookie: str) -> str:
    key = runtime.current().settings.secret_key.encode()
    return hmac.new(key, b"csrf:" + cookie.encode(), hashlib.sha256).hexdigest()


def is_csrf_valid(request: Request, pairs: list[tuple[str, str]]) -> bool:
    """Whether the form carries this browser's CSRF token and, when the browser names the
    page's origin, comes from our own."""
    origin = request.headers.get("origin")
    public = urlsplit(runtime.current().settings.public_url)
    if origin is not None and origin != f"{public.scheme}://{public.netloc}":
        return False
    cookie = request.cookies.get(cookie_name("cv_csrf"), "")
    sent = first(pairs, _CSRF_FIELD)
    return len(cookie) == 43 and hmac.compare_digest(sent.encode(), _csrf_mac(cookie).encode())


def with_csrf_cookie(response: Response, fresh: str | None) -> Response:
    if fresh is not None:
        set_cookie(response, "cv_csrf", fresh, max_age=None, same_site="lax")
    return response


def _session_account(token: str) -> str | None:
    with runtime.current().db.transaction(write=False) as session:
        return web_sessions.session_account(session, token=token, now=now_ms())


async def signed_in_account(request: Request) -> str | None:
    """The account this browser is signed in as, or None."""
    token = request.cookies.get(cookie_name("cv_session"))
    if not token:
        return None
    return await anyio.to_thread.run_sync(_session_account, token)


def session_token(request: Request) -> str | None:
    return request.cookies.get(cookie_name("cv_session"))
