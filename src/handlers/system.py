"""Service health."""

from __future__ import annotations

import logging
import time
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


_ASKED_SECONDS = 1.0  # an answer is reused this long: a flood of probes asks each component once


def _checks(rt: runtime.Runtime) -> list[health.Check]:
    with rt.readiness_lock:
        if not rt.readiness or time.monotonic() - rt.readiness[0] > _ASKED_SECONDS:
            found = health.checks(rt.db, rt.limiter, rt.store, redis=rt.settings.redis_url is not None)
            for check in found:
                if not check.ok:
                    log.warning("not ready: %s: %s", check.name, check.error)
            rt.readiness[:] = [time.monotonic(), found]
        checks: list[health.Check] = rt.readiness[1]
        return checks


def get_readiness() -> dict[str, Any]:
    found = _checks(runtime.current())
    answered = [
        {"name": check.name, "status": "ok" if check.ok else "failed", "latencyMs": check.latency_ms}
        for check in found
    ]
    failed = [check.name for check in found if not check.ok]
    if failed:
        raise NotReady(failed, answered)
    return {"status": "ready", "checks": answered}
