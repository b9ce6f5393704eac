"""The Trash as a whole: list it, empty it."""

from __future__ import annotations

from typing import Any

from cardvault.domain import cards, trash
from cardvault.handlers import runtime
from cardvault.handlers.cards import list_item_json
from cardvault.handlers.pages import page_json


def list_trash(
    user: str, limit: int = 50, cursor: str | None = None, include: str | None = None
) -> dict[str, Any]:
    rt = runtime.current()
    groups = set((include or "").split(","))
    with rt.db.transaction(write=False) as session:
        page = cards.list_cards(
            session,
            account_id=user,
            secret=rt.settings.secret_key,
            filters=cards.CardFilter(in_trash=True, archived="include"),
            limit=limit,
            cursor=cursor,
        )
        items = [
            {
                **list_item_json(card, groups),
                "deletedAt": card.deleted_at,
                "purgeAt": trash.purge_at(card, days=rt.settings.trash_days),
            }
            for card in page.cards
        ]
    return page_json(items, page.next_cursor, page.total)


def empty_trash(user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return {"deletedCount": trash.empty_trash(session, account_id=user)}
