"""The envelope every paged listing answers with: items, pageInfo, and total when counted."""

from __future__ import annotations

from typing import Any


def page_json(
    items: list[dict[str, Any]],
    next_cursor: str | None,
    total: int | None,
    *,
    total_capped: bool | None = None,
) -> dict[str, Any]:
    """Wrap one page of items; ``total`` when it was counted (capped: there are more)."""
    page: dict[str, Any] = {
        "items": items,
        "pageInfo": {"hasMore": next_cursor is not None, "nextCursor": next_cursor},
    }
    if total is not None:
        page["total"] = total
    if total is not None and total_capped is not None:
        page["totalCapped"] = total_capped
    return page
