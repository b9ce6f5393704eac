"""Service health."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from cardvault.handlers.http import runtime


def get_health() -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        session.execute(text("SELECT 1"))
    return {"status": "ok"}
