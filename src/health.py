"""Whether this process can serve: its database, its Redis (when one is configured) and its
file store each answer, and how fast. ``GET /v1/health/ready`` answers it (the load balancer's
readiness; ``GET /v1/health`` stays the cheap liveness answer) and ``cardvault doctor`` prints it
for a person setting the service up."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from sqlalchemy import text

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.limiter import Limiter
from cardvault.domain.db import Database

PROBE_KEY = "health/probe"  # an object never written: the store is asked whether it holds it


@dataclasses.dataclass(frozen=True)
class Check:
    """One component's answer: ``error`` says why it failed (None when it answered)."""

    name: str
    latency_ms: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _timed(name: str, probe: Callable[[], object]) -> Check:
    started = time.perf_counter()
    try:
        probe()
        error = None
    except Exception as exc:  # any failure of the component is its answer, said in words
        error = f"{type(exc).__name__}: {exc}"[:300]
    return Check(name, round((time.perf_counter() - started) * 1000, 1), error)


def checks(db: Database, limiter: Limiter, store: BlobStore, *, redis: bool) -> list[Check]:
    """Ask each component once, in turn; Redis only when one is configured (``redis``)."""

    def database() -> None:
        with db.transaction(write=False) as session:
            session.execute(text("SELECT 1"))

    found = [_timed("database", database)]
    if redis:
        found.append(_timed("redis", limiter.ping))
    found.append(_timed("storage", lambda: store.stat(PROBE_KEY)))
    return found
