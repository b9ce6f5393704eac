"""What a share's link opens, without credentials (cardvault.domain.shares): ``/s/{token}``, the
page of its cards (plain HTML and CSS: no script, a Content-Security-Policy that allows none,
``X-Robots-Tag: noindex``, ``Referrer-Policy: no-referrer``, the feeds linked in its head), and
each shown card's picture and file through URLs scoped to the share, served from our own origin.
The feeds are cardvault.handlers.web.share_feeds.

Every request counts against the ``share`` (per share) and ``share-address`` (per client
address) rate limits. The token is in the path: cardvault.logs redacts ``/s/<token>`` wherever
a path is logged or traced, and the metrics count these requests as ``share``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse

from cardvault.adapters.blobs import content_disposition
from cardvault.adapters.limiter import Policy
from cardvault.domain import shares
from cardvault.domain.cards.reading import CardView
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidCursor, NotFound, RateLimited, ShareExpired
from cardvault.domain.files import filetypes
from cardvault.domain.guards import rate_limits
from cardvault.domain.models import Share
from cardvault.handlers.http import runtime
from cardvault.handlers.web import pages
from cardvault.handlers.web.sign_in import address_key

PAGE_SIZE = 50
# No script, no frames, nothing from another origin: styles and pictures come from us.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SHARE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Robots-Tag": "noindex, nofollow",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}
_MEDIA_HEADERS = {**SHARE_HEADERS, "Content-Security-Policy": "default-src 'none'; sandbox"}

Read = TypeVar("Read")


class Refused(Exception):
    """A share that cannot be read: its status, and what the page says."""

    def __init__(self, status: int, title: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.title, self.message, self.retry_after = status, title, message, retry_after


def _policies(rt: runtime.Runtime) -> dict[str, Policy]:
    return {
        name: Policy.parse(name, limit)
        for name in ("share", "share-address")
        if (limit := rt.settings.rate_limits.get(name)) is not None
    }


def _spend(rt: runtime.Runtime, name: str, key: str) -> None:
    policy = _policies(rt).get(name)
    if policy is None:
        return
    try:
        rate_limits.spend(rt.limiter, policy, account_id=key)
    except RateLimited as refused:
        seconds = max(1, -(-((refused.retry_at or 0) - now_ms()) // 1000))
        raise Refused(429, "Too many requests", "Try again in a moment.", retry_after=seconds) from None


def _opened(session: Any, token: str) -> Share:
    return shares.open_share(session, token=token)


def read_share(
    request: Request,
    read: Callable[[Any, Any], Read],
    *,
    snapshot: bool = True,
    counted: bool = True,
    opener: Callable[[Any, str], Any] = _opened,
) -> Read:
    """Open the request's share (``opener``: shares.open_share, or what else opens it and
    has its ``id``) and read from it in one transaction (in a worker thread): counted per
    address before the token is looked up, per share after (unless ``counted`` is false: the
    request was counted by an earlier read). Without ``snapshot`` each statement reads by
    itself (on PostgreSQL without BEGIN and COMMIT: a feed's validators)."""
    rt = runtime.current()
    if counted:
        address = request.client.host if request.client else "unknown"
        _spend(rt, "share-address", "address:" + address_key(address))
    with rt.db.transaction(write=False, snapshot=snapshot) as session:
        try:
            share = opener(session, request.path_params["token"])
        except ShareExpired:
            raise Refused(410, "This share has expired", "The link's owner set it to stop working.") from None
        except NotFound:
            raise _missing() from None
        if counted:
            _spend(rt, "share", "share:" + share.id)
        try:
            return read(session, share)
        except NotFound:
            raise _missing() from None


def _missing() -> Refused:
    return Refused(
        404, "No such share", "This link does not work: it was revoked, or what it shared is gone."
    )


def refusal(refused: Refused) -> Response:
    headers = dict(SHARE_HEADERS, **{"Cache-Control": "no-store"})
    if refused.retry_after is not None:
        headers["Retry-After"] = str(refused.retry_after)
    body = pages.render(
        "share_refused.html", refused.status, title=refused.title, message=refused.message
    ).body
    return HTMLResponse(body, status_code=refused.status, headers=headers)


def card_item(view: CardView, base: str, include_notes: bool) -> dict[str, Any]:
    """What a share shows of one card, and nothing more."""
    picture = view.compact_object or view.screenshot_compact_object or view.thumbnail_object
    return {
        "id": view.id,
        "title": shares.shown_title(view),
        "type": view.type,
        "url": view.url if view.url and view.url.startswith(("http://", "https://")) else None,
        "tags": list(view.tags),
        "summary": view.ai_summary,
        "content": view.content if view.type in ("text", "quote") and view.content else None,
        "notes": view.notes if include_notes and view.notes else None,
        "picture": f"{base}/cards/{view.id}/picture" if picture else None,
        "file": f"{base}/cards/{view.id}/file" if view.file_object else None,
        "fileName": view.file_name,
        "createdAt": view.created_at,
        "updatedAt": view.updated_at,
    }


def share_base(request: Request) -> str:
    """The share's own path (its token inside: never logged, cardvault.logs)."""
    return "/s/" + quote(request.path_params["token"], safe="")


async def share_page(request: Request) -> Response:
    """GET /s/{token}: a page of the share's cards, newest first."""
    cursor = request.query_params.get("cursor") or None
    base = share_base(request)

    def read(session: Any, share: Share) -> dict[str, Any]:
        secret = runtime.current().settings.secret_key
        try:
            shown = shares.shared_cards(session, share, secret=secret, limit=PAGE_SIZE, cursor=cursor)
        except InvalidCursor:  # an altered cursor, or another share's: the first page instead
            shown = shares.shared_cards(session, share, secret=secret, limit=PAGE_SIZE)
        return {
            "heading": shown.heading,
            "cards": [card_item(view, base, share.include_notes) for view in shown.cards],
            "next": f"{base}?cursor={quote(shown.next_cursor)}" if shown.next_cursor else None,
        }

    try:
        values = await anyio.to_thread.run_sync(read_share, request, read)
    except Refused as refused:
        return refusal(refused)
    body = pages.render(
        "share.html", title=values["heading"], base=base, cards=values["cards"], next=values["next"]
    ).body
    return HTMLResponse(body, headers={**SHARE_HEADERS, "Cache-Control": "private, no-cache"})


async def share_media(request: Request) -> Response:
    """GET /s/{token}/cards/{card_id}/picture and /file: a shown card's picture, its file."""
    card_id = request.path_params["card_id"]
    which = "file" if request.url.path.endswith("/file") else "picture"

    def read(session: Any, share: Share) -> tuple[str, str, str, bool]:
        view = shares.shared_card(session, share, card_id)
        if which == "picture":
            key = view.compact_object or view.screenshot_compact_object or view.thumbnail_object
            return _present(key), "image/webp", "picture.webp", False
        mime = view.mime_type or "application/octet-stream"
        return _present(view.file_object), mime, view.file_name or "file", True

    try:
        key, mime, name, attachment = await anyio.to_thread.run_sync(read_share, request, read)
    except Refused as refused:
        return refusal(refused)
    store = runtime.current().store
    inline = not attachment or not filetypes.served_as_attachment(mime)
    headers = {
        **_MEDIA_HEADERS,
        "Cache-Control": "private, max-age=300",
        "Content-Disposition": content_disposition(name, attachment=not inline),
    }
    return StreamingResponse(store.stream(key), media_type=mime, headers=headers)


def _present(key: str | None) -> str:
    if key is None:
        raise NotFound("This card has none.")
    return key
