"""A share's feeds: ``/s/{token}/feed.atom`` (Atom 1.0, RFC 4287) and ``/s/{token}/feed.json``
(JSON Feed 1.1), the share's newest cards. Feed readers poll, so each answers a weak ``ETag``
and ``Last-Modified`` made from the cards it shows (their latest change and their count,
cardvault.domain.shares.version_of) and answers 304 to ``If-None-Match`` or
``If-Modified-Since`` before it reads a card, from statements that each read by themselves.
Entry ids are tag URIs (RFC 4151) of the share and the card: the same across polls, and never
the token."""

from __future__ import annotations

import datetime
import email.utils
import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit
from xml.sax import saxutils

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from cardvault.domain import shares
from cardvault.domain.models import Share
from cardvault.handlers.http import runtime
from cardvault.handlers.web.share_page import (
    SHARE_HEADERS,
    Refused,
    card_item,
    read_share,
    refusal,
    share_base,
)

FEED_SIZE = 50
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")  # XML 1.0 has no such


def escape(text: str) -> str:
    return saxutils.escape(_NOT_XML.sub("", text))


def quoteattr(text: str) -> str:
    return saxutils.quoteattr(_NOT_XML.sub("", text))


_FEED_HEADERS = {k: v for k, v in SHARE_HEADERS.items() if k != "X-Frame-Options"}


def _iso(ms: int) -> str:
    return (
        datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def _entry_id(share: Share, card_id: str | None = None) -> str:
    host = urlsplit(runtime.current().settings.public_url).hostname or "cardvault"
    day = datetime.datetime.fromtimestamp(share.created_at / 1000, datetime.UTC).date().isoformat()
    return f"tag:{host},{day}:shares/{share.id}" + (f"/cards/{card_id}" if card_id else "")


def _validators(
    changed: int, held: str, version: int, share: Share | shares.FeedVersion, kind: str
) -> tuple[str, str]:
    described = f"{kind}:{share.id}:{share.updated_at}:{share.include_notes}:{changed}:{held}:{version}"
    etag = 'W/"' + hashlib.sha256(described.encode()).hexdigest()[:32] + '"'
    return etag, email.utils.formatdate(changed / 1000, usegmt=True)


def _unchanged(request: Request, etag: str, last_modified: str) -> bool:
    sent = request.headers.get("if-none-match")
    if sent is not None:
        tags = [t.strip().removeprefix("W/") for t in sent.split(",")]
        return "*" in tags or etag.removeprefix("W/") in tags
    since = request.headers.get("if-modified-since")
    if since is None:
        return False
    try:
        asked = email.utils.parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    return (
        asked is not None
        and asked.timestamp() >= email.utils.parsedate_to_datetime(last_modified).timestamp()
    )


def _atom(feed: dict[str, Any]) -> str:
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        f"<id>{escape(feed['id'])}</id>",
        f"<title>{escape(feed['title'])}</title>",
        f"<updated>{_iso(feed['updated'])}</updated>",
        f'<link rel="self" type="application/atom+xml" href={quoteattr(feed["self"])}/>',
        f'<link rel="alternate" type="text/html" href={quoteattr(feed["home"])}/>',
        "<author><name>Card Vault</name></author>",
    ]
    for item in feed["items"]:
        link = item["url"] or feed["home"]
        out += [
            "<entry>",
            f"<id>{escape(item['entryId'])}</id>",
            f"<title>{escape(item['title'])}</title>",
            f'<link rel="alternate" href={quoteattr(link)}/>',
            f"<published>{_iso(item['createdAt'])}</published>",
            f"<updated>{_iso(item['updatedAt'])}</updated>",
            *(f"<category term={quoteattr(tag)}/>" for tag in item["tags"]),
        ]
        if item["summary"]:
            out.append(f'<summary type="text">{escape(item["summary"])}</summary>')
        text = "\n\n".join(part for part in (item["content"], item["notes"]) if part)
        if text:
            out.append(f'<content type="text">{escape(text)}</content>')
        if item["file"]:
            out.append(f'<link rel="enclosure" href={quoteattr(item["file"])}/>')
        out.append("</entry>")
    out.append("</feed>")
    return "\n".join(out)


def _json_feed(feed: dict[str, Any]) -> str:
    items = []
    for item in feed["items"]:
        entry: dict[str, Any] = {
            "id": item["entryId"],
            "url": item["url"] or feed["home"],
            "title": item["title"],
            "content_text": "\n\n".join(p for p in (item["content"], item["notes"], item["summary"]) if p)
            or item["title"],
            "date_published": _iso(item["createdAt"]),
            "date_modified": _iso(item["updatedAt"]),
            "tags": item["tags"],
        }
        if item["summary"]:
            entry["summary"] = item["summary"]
        if item["picture"]:
            entry["image"] = item["picture"]
        if item["file"]:
            entry["attachments"] = [{"url": item["file"], "mime_type": item["mimeType"]}]
        items.append(entry)
    body = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": feed["title"],
        "home_page_url": feed["home"],
        "feed_url": feed["self"],
        "items": items,
    }
    return json.dumps(body, ensure_ascii=False)


def _checked(request: Request, kind: str) -> Callable[[Any, shares.FeedVersion], tuple[str, str] | None]:
    """A conditional request's check: the validators, when they are the ones it sent."""

    def check(session: Any, found: shares.FeedVersion) -> tuple[str, str] | None:
        token = request.path_params["token"]
        found = shares.smart_feed_version(session, found, token=token, shown=FEED_SIZE)
        etag, last_modified = _validators(found.changed, found.held, found.version, found, kind)
        return (etag, last_modified) if _unchanged(request, etag, last_modified) else None

    return check


def _feed_version(session: Any, token: str) -> shares.FeedVersion:
    return shares.feed_version(session, token=token, shown=FEED_SIZE)


async def _feed(request: Request, kind: str) -> Response:
    origin = runtime.current().settings.public_url
    base = origin + share_base(request)
    headers = {**_FEED_HEADERS, "Cache-Control": "no-cache"}
    conditional = "if-none-match" in request.headers or "if-modified-since" in request.headers
    if conditional:
        # Most polls of a feed reader: answered from one statement (the share, its folder or
        # card, the feed's newest cards: shares.feed_version), read by itself (no snapshot to
        # begin and end); a miss reads the feed in one snapshot below (counted once).
        try:
            check = functools.partial(
                read_share, request, _checked(request, kind), snapshot=False, opener=_feed_version
            )
            same = await anyio.to_thread.run_sync(check)
        except Refused as refused:
            return refusal(refused)
        if same is not None:
            return Response(status_code=304, headers={**headers, "ETag": same[0], "Last-Modified": same[1]})

    def read(session: Any, share: Share) -> tuple[str, str, dict[str, Any] | None]:
        changed, held, version = shares.version_of(session, share, FEED_SIZE)
        etag, last_modified = _validators(changed, held, version, share, kind)
        if _unchanged(request, etag, last_modified):  # became the one sent since the check
            return etag, last_modified, None
        secret = runtime.current().settings.secret_key
        shown = shares.shared_cards(session, share, secret=secret, limit=FEED_SIZE)
        items = []
        for view in shown.cards:
            item = card_item(view, base, share.include_notes)
            item.update(
                entryId=_entry_id(share, view.id), mimeType=view.mime_type or "application/octet-stream"
            )
            items.append(item)
        suffix = "atom" if kind == "atom" else "json"
        feed = {
            "id": _entry_id(share),
            "title": shown.heading,
            "updated": changed or share.created_at,
            "self": f"{base}/feed.{suffix}",
            "home": base,
            "items": items,
        }
        return etag, last_modified, feed

    try:
        reading = functools.partial(read_share, request, read, counted=not conditional)
        etag, last_modified, feed = await anyio.to_thread.run_sync(reading)
    except Refused as refused:
        return refusal(refused)
    headers.update({"ETag": etag, "Last-Modified": last_modified})
    if feed is None:
        return Response(status_code=304, headers=headers)
    if kind == "atom":
        return Response(_atom(feed), media_type="application/atom+xml; charset=utf-8", headers=headers)
    return Response(_json_feed(feed), media_type="application/feed+json; charset=utf-8", headers=headers)


async def atom_feed(request: Request) -> Response:
    """GET /s/{token}/feed.atom"""
    return await _feed(request, "atom")


async def json_feed(request: Request) -> Response:
    """GET /s/{token}/feed.json"""
    return await _feed(request, "json")
