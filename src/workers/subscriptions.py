"""Polling feed subscriptions (cardvault.domain.subscriptions): the sweeper sends the due ones
each pass (one feed of a host at a time); a poll GETs the feed through the SSRF-safe fetcher
with the last answer's validators, and applies what it read in one transaction. Idempotent: a
poll run twice finds the entries it saved among the account's cards."""

from __future__ import annotations

from cardvault.adapters.fetcher import FetchRefused
from cardvault.domain import subscriptions
from cardvault.domain.clock import now_ms
from cardvault.services import Services
from cardvault.workers.broker import actor
from cardvault.workers.pipeline import send_after_commit

ACCEPT = "application/atom+xml, application/rss+xml, application/feed+json, application/json;q=0.9, */*;q=0.5"


@actor(actor_name="poll_subscription", queue_name="imported", max_retries=0, time_limit=120_000)
def poll_subscription(services: Services, subscription_id: str) -> None:
    poll(services, subscription_id)


def poll(services: Services, subscription_id: str) -> str:
    """Poll one feed now; answer what came of it (``saved:<n>``, ``unchanged`` or the code it
    failed with)."""
    db = services.database
    with db.transaction(write=False, snapshot=False) as session:  # one statement
        found = subscriptions.validators(session, subscription_id)
    if found is None:
        return "gone"
    url, etag, last_modified = found
    headers = {"Accept": ACCEPT, "User-Agent": "CardVault-Feeds/1"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    try:
        fetched = services.fetcher.fetch(url, headers=headers, max_bytes=subscriptions.MAX_BYTES)
        if fetched.status == 304:
            with db.transaction() as session:
                subscriptions.unchanged(session, subscription_id)
            return "unchanged"
        if fetched.status != 200:
            raise subscriptions.PollFailed("FEED_HTTP_ERROR", f"The feed answered HTTP {fetched.status}.")
        entries, ttl = subscriptions.parse(fetched.body, fetched.headers.get("content-type", ""))
    except FetchRefused as refused:
        code = "FEED_TOO_LARGE" if refused.code == "TOO_LARGE" else refused.code
        return _failed(services, subscription_id, code, str(refused))
    except subscriptions.PollFailed as failure:
        return _failed(services, subscription_id, failure.code, str(failure))
    with db.transaction() as session:
        written = subscriptions.save(
            session,
            subscription_id,
            entries,
            ttl_minutes=ttl,
            etag=fetched.headers.get("etag"),
            last_modified=fetched.headers.get("last-modified"),
        )
        for made in written:
            send_after_commit(session, made)
    return f"saved:{len(written)}"


def _failed(services: Services, subscription_id: str, code: str, message: str) -> str:
    with services.database.transaction() as session:
        subscriptions.failed(session, subscription_id, code, message)
    return code


def send_due(services: Services) -> int:
    """Send the polls that are due; return how many."""
    with services.database.transaction() as session:
        due = subscriptions.due(session, now=now_ms())
    for subscription_id in due:
        poll_subscription.send(subscription_id)
    return len(due)
