"""Feed subscription operations: thin edges over cardvault.domain.subscriptions (the polls are
cardvault.workers.subscriptions')."""

from __future__ import annotations

from typing import Any

from cardvault.domain import cursors, subscriptions
from cardvault.domain.models import Subscription
from cardvault.handlers.http import runtime
from cardvault.handlers.http.paging import page_json


def subscription_json(subscription: Subscription) -> dict[str, Any]:
    return {
        "id": subscription.id,
        "url": subscription.url,
        "tags": list(subscription.tags),
        "folderId": subscription.folder_id,
        "lastPolledAt": subscription.last_polled_at,
        "nextPollAt": subscription.next_poll_at,
        "lastError": subscription.last_error,
        "entriesSaved": subscription.entries_saved,
        "createdAt": subscription.created_at,
        "updatedAt": subscription.updated_at,
    }


def create_subscription(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    with runtime.current().db.transaction() as session:
        made = subscriptions.create(
            session,
            account_id=user,
            url=body["url"],
            tags=body.get("tags", ()),
            folder_id=body.get("folderId"),
        )
        return subscription_json(made), 201, {"Location": f"/v1/subscriptions/{made.id}"}


def list_subscriptions(user: str, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        found, next_cursor, total = cursors.newest_first(
            session, Subscription, account_id=user, secret=rt.settings.secret_key, limit=limit, cursor=cursor
        )
        items = [subscription_json(s) for s in found]
    return page_json(items, next_cursor, total)


def get_subscription(subscription_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        return subscription_json(subscriptions.get(session, account_id=user, subscription_id=subscription_id))


def update_subscription(subscription_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    folder = {"folder_id": body["folderId"]} if "folderId" in body else {}
    with runtime.current().db.transaction() as session:
        changed = subscriptions.update(
            session,
            account_id=user,
            subscription_id=subscription_id,
            url=body.get("url"),
            tags=body.get("tags"),
            **folder,
        )
        return subscription_json(changed)


def delete_subscription(subscription_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        subscriptions.delete(session, account_id=user, subscription_id=subscription_id)
    return None, 204
