"""The envelope every paged listing answers with: items, pageInfo, total."""

from __future__ import annotations

from typing import Any


def page_json(items: list[dict[str, Any]], next_cursor: str | None, total: int) -> dict[str, Any]:
    """Wrap one page of items."""
    return {
        "items": items,
        "pageInfo": {"hasMore": next_cursor is not None, "nextCursor": next_cursor},
        "total": total,
    }
