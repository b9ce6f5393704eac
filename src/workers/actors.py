"""Every actor module, in one list: a process that runs workers imports this, and Dramatiq then
knows every actor (actors are declared when their module is imported). The queues a worker
listens on are those the declared actors use (``queues``)."""

from __future__ import annotations

from cardvault.workers import (
    changes,
    exports,
    files,
    idempotency,
    imports,
    oauth,
    pipeline,
    subscriptions,
    tags,
    trash,
    webhooks,
)
from cardvault.workers.broker import broker

MODULES = (
    changes,
    exports,
    files,
    idempotency,
    imports,
    oauth,
    pipeline,
    subscriptions,
    tags,
    trash,
    webhooks,
)


def queues() -> list[str]:
    """The queues of every actor declared (each once, by name)."""
    return sorted({actor.queue_name for actor in broker.actors.values()})
