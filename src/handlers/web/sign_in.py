"""The sign-in page, signing out, and the limit on sign-in attempts.

Every attempt counts, before its password is checked, against two policies of the shared
limiter: ``sign-in-account`` (per email) and ``sign-in-address`` (per client address; an IPv6
address by its /64, which one host usually holds whole), and ``sign-in-all`` (every attempt of the
service, so a flood from many addresses is bounded too), which never fail open: while Redis cannot
be reached they are counted in each API process's memory. Counting first, atomically, means
guesses sent at once cannot pass the limit together, and an attempt over it costs no hash.
A wrong email and a wrong password get the same answer in the same time."""

from __future__ import annotations

import dataclasses
import ipaddress

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from cardvault.adapters.limiter import Policy
from cardvault.domain.auth import accounts, credentials, web_sessions
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import RateLimited, ServiceBusy
from cardvault.domain.guards import rate_limits
from cardvault.domain.models import Account
from cardvault.handlers.http import runtime
from cardvault.handlers.web import pages

_WRONG = "That email and password do not match an account. Check both and try again."


def address_key(host: str) -> str:
    """A client address as the limit counts it: IPv4 whole, IPv6 by its /64."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is 192.0.2.1
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _policies(rt: runtime.Runtime, request: Request, email: str) -> list[tuple[Policy, str]]:
    """The sign-in policies in force, each with the key it counts this attempt under."""
    keys = {
        "sign-in-account": "email:" + accounts.email_key(email),
        "sign-in-address": "address:" + address_key(request.client.host if request.client else "unknown"),
        "sign-in-all": "all",  # the service's whole budget, whatever the addresses
    }
    return [
        (Policy.parse(name, limit), key)
        for name, key in keys.items()
        if (limit := rt.settings.rate_limits.get(name)) is not None
    ]


@dataclasses.dataclass(frozen=True)
class _Outcome:
    account_name: str | None = None
    session_token: str | None = None
    retry_at: int | None = None


def _attempt(rt: runtime.Runtime, policies: list[tuple[Policy, str]], email: str, password: str) -> _Outcome:
    try:
        for policy, key in policies:
            # Never turned off: with Redis unreachable, counted in this process.
            rate_limits.spend(rt.limiter, policy, account_id=key, fail_open=False)
    except RateLimited as refused:
        return _Outcome(retry_at=refused.retry_at)
    with rt.db.transaction(write=False) as session:
        account = accounts.account_by_email(session, email=email) if len(email) <= 254 else None
        stored = account.password_hash if account else None
        account_id = account.id if account else None
    if not rt.passwords.verify(stored, password) or account_id is None or stored is None:
        return _Outcome()
    with rt.db.transaction() as session:
        signed_in = session.get(Account, account_id)
        if signed_in is None:
            return _Outcome()
        if rt.passwords.needs_rehash(stored):  # the settings' parameters changed since
            signed_in.password_hash = rt.passwords.hash(password)
        token = web_sessions.start_session(session, account_id=account_id, now=now_ms())
        return _Outcome(account_name=signed_in.name, session_token=token)


def _account_name(rt: runtime.Runtime, account_id: str) -> str:
    with rt.db.transaction(write=False) as session:
        account = session.get(Account, account_id)
        return account.name if account else ""


async def sign_in_page(request: Request) -> Response:
    """The sign-in form (or, signed in already, where to go next)."""
    next_path = pages.safe_next(request.query_params.get("next"), default="")
    account_id = await pages.signed_in_account(request)
    csrf, fresh = pages.csrf_token(request)
    if account_id is not None:
        if next_path:
            return pages.redirect(next_path)
        name = await anyio.to_thread.run_sync(_account_name, runtime.current(), account_id)
        return pages.with_csrf_cookie(
            pages.render("signed_in.html", title="Signed in", signed_in_as=name, csrf=csrf), fresh
        )
    return pages.with_csrf_cookie(_form(csrf, next_path, email="", error=None), fresh)


def _form(csrf: str, next_path: str, *, email: str, error: str | None, status: int = 200) -> Response:
    return pages.render(
        "sign_in.html",
        status,
        title="Sign in",
        signed_in_as=None,
        csrf=csrf,
        next=next_path,
        email=email,
        error=error,
    )


def _message(status: int, title: str, message: str, *, link_text: str = "Back to sign-in") -> Response:
    """A page that says what went wrong, with a way back to the sign-in form."""
    return pages.render(
        "message.html",
        status,
        title=title,
        message=message,
        alert=True,
        link="/sign-in",
        link_text=link_text,
        signed_in_as=None,
    )


async def sign_in(request: Request) -> Response:
    """Check the email and password; start a session and go on, or show the form again."""
    try:
        form = await pages.read_form(request)
    except pages.FormRefused as refused:
        return _message(400, "Sign-in failed", str(refused))
    csrf, fresh = pages.csrf_token(request)
    email, password = pages.first(form, "email").strip(), pages.first(form, "password")
    next_path = pages.safe_next(pages.first(form, "next"), default="")
    if not pages.is_csrf_valid(request, form):
        return pages.with_csrf_cookie(
            _form(
                csrf,
                next_path,
                email=email,
                error="This form expired or came from another site. Please sign in again.",
                status=403,
            ),
            fresh,
        )
    rt = runtime.current()
    try:  # a slot of the password checks first: a flood waits on the event loop, not in threads
        outcome = await rt.sign_ins.run(_attempt, rt, _policies(rt, request, email), email, password)
    except ServiceBusy:
        busy = _message(
            503, "Sign-in is busy", "Too many sign-ins are being checked right now. Try again in a moment."
        )
        busy.headers["Retry-After"] = "1"
        return busy
    if outcome.retry_at is not None:
        seconds = max(1, -(-(outcome.retry_at - now_ms()) // 1000))
        minutes = -(-seconds // 60)
        response = _form(
            csrf,
            next_path,
            email=email,
            error=f"Too many sign-in attempts. Try again in {minutes} minute{'s' if minutes != 1 else ''}.",
            status=429,
        )
        response.headers["Retry-After"] = str(seconds)
        return pages.with_csrf_cookie(response, fresh)
    if outcome.session_token is None:
        return pages.with_csrf_cookie(_form(csrf, next_path, email=email, error=_WRONG, status=401), fresh)
    response = pages.redirect(next_path or "/sign-in")
    pages.set_cookie(
        response,
        "cv_session",
        outcome.session_token,
        max_age=web_sessions.SESSION_SECONDS,
        same_site="lax",  # sent when a client app sends the browser to /oauth/authorize
    )
    return response


def _spend_link(rt: runtime.Runtime, token: str) -> str | None:
    with rt.db.transaction() as session:
        return web_sessions.sign_in_with_link(session, token=token, now=now_ms())


_LINK_NOT_VALID = (
    "This sign-in link was used already, has expired, or is not one. Restart the server "
    "for a new one, or sign in with an email and password."
)


async def sign_in_link_page(request: Request) -> Response:
    """The page a one-time sign-in link opens (``cardvault serve`` prints one on the embedded
    default): a button that spends it. Opening it spends nothing, so a mail scanner's or a
    previewer's GET or HEAD leaves the link to the person it was for."""
    token = request.query_params.get("token", "")
    if not credentials.is_well_formed(token, credentials.SIGN_IN_LINK):
        return _message(400, "Sign-in link not valid", _LINK_NOT_VALID)
    csrf, fresh = pages.csrf_token(request)
    page = pages.render("sign_in_link.html", title="Sign in", signed_in_as=None, csrf=csrf, token=token)
    return pages.with_csrf_cookie(page, fresh)


async def sign_in_link(request: Request) -> Response:
    """Spend the link the page's form sent (from this site, with its CSRF token) and go on to
    the signed-in page with the session started."""
    try:
        form = await pages.read_form(request)
    except pages.FormRefused as refused:
        return _message(400, "Sign-in failed", str(refused))
    if not pages.is_csrf_valid(request, form):
        return _message(
            403, "Sign-in failed", "This form expired or came from another site. Open the link again."
        )
    started = await anyio.to_thread.run_sync(_spend_link, runtime.current(), pages.first(form, "token"))
    if started is None:
        return _message(400, "Sign-in link not valid", _LINK_NOT_VALID)
    response = pages.redirect("/sign-in")
    pages.set_cookie(response, "cv_session", started, max_age=web_sessions.SESSION_SECONDS, same_site="lax")
    return response


def _end(rt: runtime.Runtime, token: str) -> None:
    with rt.db.transaction() as session:
        web_sessions.end_session(session, token=token)


async def sign_out(request: Request) -> Response:
    """End the browser's session."""
    try:
        form = await pages.read_form(request)
    except pages.FormRefused:
        form = []
    if not pages.is_csrf_valid(request, form):
        return _message(
            403,
            "Sign-out failed",
            "This form expired or came from another site. Reload the page and try again.",
            link_text="Back",
        )
    token = pages.session_token(request)
    if token:
        await anyio.to_thread.run_sync(_end, runtime.current(), token)
    response = pages.redirect("/sign-in")
    pages.clear_cookie(response, "cv_session")
    return response
