"""The Trash as a whole: list it, empty it."""

from __future__ import annotations

from typing import Any

from cardvault.domain.cards import listing, trash
from cardvault.domain.db import after_commit
from cardvault.handlers.card_json import list_item_json, stages_for_list
from cardvault.handlers.http import runtime
from cardvault.handlers.http.paging import page_json
from cardvault.workers.files import delete_doomed_objects


def list_trash(
    user: str, limit: int = 50, cursor: str | None = None, include: list[str] | None = None
) -> dict[str, Any]:
    rt = runtime.current()
    groups = set(include or [])
    with rt.db.transaction(write=False, snapshot="total" in groups) as session:
        page = listing.list_cards(
            session,
            account_id=user,
            secret=rt.settings.secret_key,
            filters=listing.CardFilter(in_trash=True, archived="include"),
            limit=limit,
            cursor=cursor,
            with_total="total" in groups,
        )
        stages = stages_for_list(session, page.cards, groups)
    items = [
        {
            **list_item_json(card, groups, stages.get(card.pk)),
            "deletedAt": card.deleted_at,
            "purgeAt": trash.purge_at(card.deleted_at, days=rt.settings.trash_days),
        }
        for card in page.cards
    ]
    return page_json(items, page.next_cursor, page.total, total_capped=page.total_capped)


def empty_trash(user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        deleted = trash.empty_trash(session, account_id=user)
        after_commit(session, delete_doomed_objects.send)  # their files (the sweeper also sends it)
    return {"deletedCount": deleted}
