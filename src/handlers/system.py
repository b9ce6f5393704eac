"""Service health."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import text

from cardvault import health
from cardvault.domain.errors import NotReady
from cardvault.handlers.http import runtime

log = logging.getLogger("cardvault.health")


def get_health() -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        session.execute(text("SELECT 1"))
    return {"status": "ok"}


def get_readiness() -> dict[str, Any]:
    rt = runtime.current()
    found = health.checks(rt.db, rt.limiter, rt.store, redis=rt.settings.redis_url is not None)
    answered = [
        {"name": check.name, "status": "ok" if check.ok else "failed", "latencyMs": check.latency_ms}
        for check in found
    ]
    failed = [check for check in found if not check.ok]
    for check in failed:
        log.warning("not ready: %s: %s", check.name, check.error)
    if failed:
        raise NotReady([check.name for check in failed], answered)
    return {"status": "ready", "checks": answered}
