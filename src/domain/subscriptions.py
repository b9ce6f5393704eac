"""Feed subscriptions: an account follows an RSS, Atom or JSON feed; the workers poll it
(cardvault.workers.subscriptions) and each new entry becomes a link card.

A poll is polite: no sooner than the feed's ``ttl`` (RSS) or POLL_MINUTES after the last, with
the last answer's ``ETag`` and ``Last-Modified``, backing off after failures (doubling up to a
day), and one feed of a host at a time (``due``). Its outcome is applied here in one
transaction: a feed that is not one, is over MAX_BYTES or holds over MAX_ENTRIES saves nothing
and records its code. An entry is saved once: its link's normal form is looked up among the
account's cards (Trash included), so a page saved by hand, or by an earlier poll, is not saved
again. A new card keeps the entry's title and summary until its page is read, takes the
subscription's tags and folder, and its stages run behind those of cards saved by hand."""

from __future__ import annotations

import dataclasses
import json
import xml.sax
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

import feedparser
from sqlalchemy import Table, bindparam, select
from sqlalchemy import update as sql_update
from sqlalchemy.orm import Session

from cardvault.domain import folders
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidInput, SmartFolder
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card, Subscription, get_owned
from cardvault.domain.pipeline.processing import Written
from cardvault.domain.statements import prepared_rows

__all__ = ["Subscription"]  # re-exported for the workers
from cardvault.domain.tags.names import clean_tags
from cardvault.domain.urls import normal_url, url_key

MAX_BYTES = 10 * 1024 * 1024
MAX_ENTRIES = 1000
POLL_MINUTES = 30  # the least time between two polls of a feed
MAX_BACKOFF_MINUTES = 24 * 60
_MINUTE = 60_000


def _checked_url(url: str) -> tuple[str, str]:
    normal = normal_url(url.strip())
    host = urlsplit(normal).hostname if normal else None
    if normal is None or host is None:
        problem = {"location": "body", "field": "url", "message": "is not an http or https URL with a host"}
        raise InvalidInput("The url is not an http or https URL with a host.", details={"fields": [problem]})
    return url.strip(), host


def _checked_folder(session: Session, account_id: str, folder_id: str | None) -> str | None:
    if folder_id is None:
        return None
    folder = folders.get_folder(session, account_id=account_id, folder_id=folder_id)
    if folder.kind == "smart":
        raise SmartFolder("A smart folder holds what its query matches: a feed cannot put cards in it.")
    return folder.id


def create(
    session: Session,
    *,
    account_id: str,
    url: str,
    tags: Sequence[str] = (),
    folder_id: str | None = None,
) -> Subscription:
    """Follow a feed; its first poll is due at once."""
    url, host = _checked_url(url)
    now = now_ms()
    subscription = Subscription(
        id=new_id("sub"),
        account_id=account_id,
        url=url,
        host=host,
        tags=clean_tags(tags),
        folder_id=_checked_folder(session, account_id, folder_id),
        next_poll_at=now,
        failures=0,
        entries_saved=0,
        created_at=now,
        updated_at=now,
    )
    session.add(subscription)
    session.flush()
    return subscription


def get(session: Session, *, account_id: str, subscription_id: str, for_update: bool = False) -> Subscription:
    return get_owned(
        session, Subscription, row_id=subscription_id, account_id=account_id, for_update=for_update
    )


_UNSET = object()


def update(
    session: Session,
    *,
    account_id: str,
    subscription_id: str,
    url: str | None = None,
    tags: Sequence[str] | None = None,
    folder_id: str | object | None = _UNSET,
) -> Subscription:
    """Change what is given (``folder_id=None``: no folder); a new url is polled afresh."""
    subscription = get(session, account_id=account_id, subscription_id=subscription_id, for_update=True)
    if url is not None:
        checked, host = _checked_url(url)
        if checked != subscription.url:
            subscription.url, subscription.host = checked, host
            subscription.etag = subscription.last_modified = None
            subscription.next_poll_at, subscription.failures = now_ms(), 0
    if tags is not None:
        subscription.tags = clean_tags(tags)
    if folder_id is not _UNSET:
        chosen = folder_id if isinstance(folder_id, str) else None
        subscription.folder_id = _checked_folder(session, account_id, chosen)
    subscription.updated_at = max(now_ms(), subscription.updated_at + 1)
    session.flush()
    return subscription


def delete(session: Session, *, account_id: str, subscription_id: str) -> None:
    session.delete(get(session, account_id=account_id, subscription_id=subscription_id, for_update=True))
    session.flush()


POLL_LEASE_MS = 5 * _MINUTE  # a poll sent is not sent again this long, unless it ends first


def due(session: Session, *, now: int, limit: int = 100) -> list[str]:
    """Subscriptions whose poll is due, the longest waiting first, one of each host (its other
    feeds wait for the next round: a host is polled one feed at a time); each is held back for
    POLL_LEASE_MS, so the next sweep does not send it again while it runs."""
    rows = session.execute(
        select(Subscription.id, Subscription.host)
        .where(Subscription.next_poll_at <= now)
        .order_by(Subscription.next_poll_at, Subscription.id)
        .limit(limit * 4)
    ).all()
    chosen: dict[str, str] = {}
    for subscription_id, host in rows:
        chosen.setdefault(host, subscription_id)
    picked = list(chosen.values())[:limit]
    if picked:
        held = sql_update(Subscription).where(Subscription.id.in_(picked))
        session.execute(held.values(next_poll_at=now + POLL_LEASE_MS))
    return picked


@dataclasses.dataclass(frozen=True)
class Entry:
    url: str
    title: str | None
    summary: str | None


class PollFailed(Exception):
    """A poll that saves nothing; ``code`` is recorded as the subscription's ``lastError``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    line = " ".join(value.split())[:2000]
    return line or None


def parse(body: bytes, content_type: str) -> tuple[list[Entry], int | None]:
    """The entries of a feed (RSS, Atom or JSON Feed) and its ``ttl`` in minutes, or PollFailed
    (FEED_TOO_LARGE, NOT_A_FEED, MALFORMED_FEED, TOO_MANY_ENTRIES)."""
    if len(body) > MAX_BYTES:
        raise PollFailed("FEED_TOO_LARGE", f"The feed is over {MAX_BYTES} bytes.")
    if "json" in content_type.lower() or body.lstrip()[:1] == b"{":
        return _json_feed(body), None
    parsed = feedparser.parse(body, sanitize_html=False, resolve_relative_uris=False)
    if not parsed.version:
        raise PollFailed("NOT_A_FEED", "The answer is not an RSS or Atom feed.")
    if parsed.bozo and isinstance(parsed.get("bozo_exception"), xml.sax.SAXParseException):
        raise PollFailed("MALFORMED_FEED", f"The feed is not well-formed XML: {parsed.bozo_exception}")
    if len(parsed.entries) > MAX_ENTRIES:
        raise PollFailed("TOO_MANY_ENTRIES", f"The feed holds over {MAX_ENTRIES} entries.")
    entries = [
        Entry(str(e.get("link")), _text(e.get("title")), _text(e.get("summary")))
        for e in parsed.entries
        if isinstance(e.get("link"), str)
    ]
    ttl = parsed.feed.get("ttl")
    return entries, int(ttl) if isinstance(ttl, str) and ttl.isdigit() else None


def _json_feed(body: bytes) -> list[Entry]:
    try:
        feed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PollFailed("NOT_A_FEED", "The answer is neither a feed nor valid JSON.") from None
    version = feed.get("version") if isinstance(feed, dict) else None
    items = feed.get("items") if isinstance(feed, dict) else None
    if not isinstance(version, str) or not version.startswith("https://jsonfeed.org/version/"):
        raise PollFailed("NOT_A_FEED", "The JSON is not a JSON Feed.")
    if not isinstance(items, list):
        raise PollFailed("NOT_A_FEED", "The JSON Feed has no items.")
    if len(items) > MAX_ENTRIES:
        raise PollFailed("TOO_MANY_ENTRIES", f"The feed holds over {MAX_ENTRIES} entries.")
    return [
        Entry(item["url"], _text(item.get("title")), _text(item.get("summary") or item.get("content_text")))
        for item in items
        if isinstance(item, dict) and isinstance(item.get("url"), str)
    ]


def _next_poll(now: int, ttl_minutes: int | None) -> int:
    return now + max(POLL_MINUTES, min(ttl_minutes or 0, MAX_BACKOFF_MINUTES)) * _MINUTE


def save(
    session: Session,
    subscription_id: str,
    entries: Sequence[Entry],
    *,
    ttl_minutes: int | None,
    etag: str | None,
    last_modified: str | None,
) -> list[Written]:
    """Apply a poll that read the feed: each entry not yet among the account's cards becomes
    one; the validators kept for the next poll. The cards written (their stages to send)."""
    subscription = session.get(Subscription, subscription_id, with_for_update=True)
    if subscription is None:  # deleted while it was polled
        return []
    now = now_ms()
    keyed = {key: entry for entry in entries if (key := url_key(entry.url)) is not None}
    held = set(
        session.scalars(
            select(Card.url_key).where(
                Card.account_id == subscription.account_id, Card.url_key.in_(list(keyed))
            )
        )
    )
    written = []
    for key, entry in keyed.items():
        if key in held:
            continue
        made = editing.add_card(
            session,
            account_id=subscription.account_id,
            url=entry.url,
            tags=list(subscription.tags),
            queued=True,
            imported=True,  # behind the stages of cards saved by hand
        )
        made.card.metadata_title, made.card.metadata_description = entry.title, entry.summary
        if subscription.folder_id is not None:
            folders.add_cards(
                session,
                account_id=subscription.account_id,
                folder_id=subscription.folder_id,
                card_ids=[made.card.id],
            )
        held.add(key)
        written.append(made)
    subscription.entries_saved += len(written)
    subscription.etag, subscription.last_modified = etag, last_modified
    _polled(subscription, now, _next_poll(now, ttl_minutes))
    return written


# Built once, so compiled once (cardvault.domain.statements): every poll sends it.
_VALIDATORS = select(Subscription.url, Subscription.etag, Subscription.last_modified).where(
    Subscription.id == bindparam("id")
)


def validators(session: Session, subscription_id: str) -> tuple[str, str | None, str | None] | None:
    """What a poll sends: the feed's URL and its last answer's ETag and Last-Modified (None for
    a subscription deleted meanwhile). One statement, no row built."""
    found = prepared_rows(session, _VALIDATORS, {"id": subscription_id})
    return None if not found else (found[0][0], found[0][1], found[0][2])


_TABLE = cast(Table, Subscription.__table__)
# A 304 after a successful poll: its poll times alone (built once, so compiled once).
_QUIET_POLL = (
    sql_update(_TABLE)
    .where(
        _TABLE.c.id == bindparam("subscription"),
        _TABLE.c.last_error.is_(None),
        _TABLE.c.failures == 0,
    )
    .values(last_polled_at=bindparam("now"), next_poll_at=bindparam("next"))
)


def unchanged(session: Session, subscription_id: str) -> None:
    """Apply a poll answered 304 Not Modified. When the last poll succeeded too (most polls:
    a feed polled every half hour that did not change) it is one UPDATE of the poll times, no
    change for the changes feed (cardvault.domain.changes' quiet columns), committed on
    PostgreSQL without waiting for its WAL to reach the disk: a crash can lose only the poll
    times, and the feed is then polled again early, which a poll is made to bear. After a
    failure the row is read and its error cleared, a change, committed as any other."""
    now = now_ms()
    connection = session.connection()  # Core statements: the ORM's bulk UPDATE costs more
    postgresql = connection.dialect.name == "postgresql"
    if postgresql:
        connection.exec_driver_sql("SET LOCAL synchronous_commit = off")
    polled = {"subscription": subscription_id, "now": now, "next": _next_poll(now, None)}
    if connection.execute(_QUIET_POLL, polled).rowcount == 1:
        return
    if postgresql:
        connection.exec_driver_sql("SET LOCAL synchronous_commit = on")
    subscription = session.get(Subscription, subscription_id, with_for_update=True)
    if subscription is not None:
        _polled(subscription, now, _next_poll(now, None))


def failed(session: Session, subscription_id: str, code: str, message: str) -> None:
    """Apply a poll that failed: nothing saved, its code kept, the next one backed off."""
    subscription = session.get(Subscription, subscription_id, with_for_update=True)
    if subscription is None:
        return
    now = now_ms()
    failures = subscription.failures + 1
    wait = min(POLL_MINUTES * 2 ** min(failures, 10), MAX_BACKOFF_MINUTES)
    subscription.last_polled_at, subscription.next_poll_at = now, now + wait * _MINUTE
    subscription.last_error, subscription.last_error_message = code, message[:500]
    subscription.failures = failures


def _polled(subscription: Subscription, now: int, next_at: int) -> None:
    subscription.last_polled_at, subscription.next_poll_at = now, next_at
    subscription.last_error = subscription.last_error_message = None
    subscription.failures = 0
