"""The Dramatiq broker, built once per process when this module is imported, before any actor
is declared (Dramatiq binds actors to the broker at declaration). With CARDVAULT_REDIS_URL it is
Redis, shared by API and worker processes; without it, an in-memory broker whose worker runs
inside the API process (the embedded default)."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker

from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.domain.db import Database
from cardvault.settings import Settings

# Redis redelivers a dead worker's unacknowledged messages once its heartbeat is this old; our
# own sweeper (cardvault.workers.sweeper) re-sends stale operations as well.
HEARTBEAT_TIMEOUT_MS = 15_000
MAINTENANCE_CHANCE = 50_000  # of 1,000,000 broker calls: a dead worker's messages return soon


def _build() -> dramatiq.Broker:
    url = Settings.redis_url_from_env()
    if url is None:
        stub = StubBroker()
        stub.emit_after("process_boot")
        return stub
    return RedisBroker(url=url, heartbeat_timeout=HEARTBEAT_TIMEOUT_MS, maintenance_chance=MAINTENANCE_CHANCE)


broker = _build()
dramatiq.set_broker(broker)

_context: dict[str, object] = {}


def bind(settings: Settings, db: Database, store: BlobStore | None = None) -> None:
    """Give this process's actors their settings, database and blob store."""
    _context["settings"] = settings
    _context["db"] = db
    _context["store"] = store or store_from_settings(settings)


def settings() -> Settings:
    """The settings bound for this process's actors."""
    return _context["settings"]  # type: ignore[return-value]


def blob_store() -> BlobStore:
    """The blob store bound for this process's actors."""
    return _context["store"]  # type: ignore[return-value]


def database() -> Database:
    """The database bound for this process's actors."""
    return _context["db"]  # type: ignore[return-value]


def is_embedded() -> bool:
    """Say whether messages stay in this process (no Redis)."""
    return isinstance(broker, StubBroker)
