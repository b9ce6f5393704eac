"""Share and feed subscription events (issue 47): told only to an endpoint whose events name
them (`*` keeps meaning the events there were before 1.3.0); a subscription's poll is told only
when it moved entriesSaved or lastError; the payload never holds a share's token."""

from __future__ import annotations

from sqlalchemy import select

from cardvault.domain import shares, subscriptions
from cardvault.domain.db import Database
from cardvault.domain.models import WebhookDelivery
from tests.unit.domain.webhooks.test_events import _card, _dispatched, _hook

SHARE_EVENTS = ["share.created", "share.updated", "share.deleted"]
SUBSCRIPTION_EVENTS = ["subscription.created", "subscription.updated", "subscription.deleted"]


def test_share_events_reach_only_endpoints_that_name_them(database: Database, account_id: str) -> None:
    card = _card(database, account_id, "a card to share")
    every = _hook(database, account_id, ["*"])
    named = _hook(database, account_id, SHARE_EVENTS)
    assert _dispatched(database, account_id) == []
    with database.transaction() as session:
        made, token = shares.create_share(session, account_id=account_id, card_id=card)
        share_id = made.id
    assert _dispatched(database, account_id) == [(named, "share.created", share_id)]
    with database.transaction() as session:
        shares.update_share(session, account_id=account_id, share_id=share_id, title="Now titled")
    assert _dispatched(database, account_id) == [(named, "share.updated", share_id)]
    with database.transaction() as session:
        shares.delete_share(session, account_id=account_id, share_id=share_id)
    assert _dispatched(database, account_id) == [(named, "share.deleted", share_id)]
    with database.transaction(write=False) as session:
        sent = select(WebhookDelivery.body).where(WebhookDelivery.webhook_id == named)
        bodies = session.scalars(sent).all()
    assert len(bodies) == 3 and not any(token in body for body in bodies)
    assert every != named


def test_subscription_events_and_polls_that_change_nothing(database: Database, account_id: str) -> None:
    every = _hook(database, account_id, ["*"])
    named = _hook(database, account_id, SUBSCRIPTION_EVENTS)
    with database.transaction() as session:
        followed = subscriptions.create(session, account_id=account_id, url="https://blog.example/feed").id
    assert _dispatched(database, account_id) == [(named, "subscription.created", followed)]
    entry = subscriptions.Entry("https://blog.example/1", "One", None)
    with database.transaction() as session:
        subscriptions.save(session, followed, [entry], ttl_minutes=None, etag='"a"', last_modified=None)
    told = _dispatched(database, account_id)
    assert (named, "subscription.updated", followed) in told  # entriesSaved moved
    assert [event for hook, event, _ in told if hook == every] == ["card.created"]  # the entry's card
    with database.transaction() as session:
        subscriptions.unchanged(session, followed)
        subscriptions.save(session, followed, [entry], ttl_minutes=None, etag='"b"', last_modified=None)
    assert _dispatched(database, account_id) == []  # polled, nothing changed
    with database.transaction() as session:
        subscriptions.failed(session, followed, "FEED_HTTP_ERROR", "HTTP 500")
    assert _dispatched(database, account_id) == [(named, "subscription.updated", followed)]
    with database.transaction() as session:
        subscriptions.failed(session, followed, "FEED_HTTP_ERROR", "HTTP 503")
    assert _dispatched(database, account_id) == []
    with database.transaction() as session:
        subscriptions.delete(session, account_id=account_id, subscription_id=followed)
    assert _dispatched(database, account_id) == [(named, "subscription.deleted", followed)]
