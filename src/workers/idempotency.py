"""The periodic deletion of Idempotency-Keys kept past their 24 hours."""

from __future__ import annotations

import dramatiq

from cardvault.domain.guards import idempotency
from cardvault.workers.broker import database

BATCH = 5000


@dramatiq.actor(
    actor_name="forget_idempotency_keys", queue_name="housekeeping", max_retries=3, time_limit=300_000
)
def forget_idempotency_keys() -> None:
    """Delete, batch by batch, every Idempotency-Key older than 24 hours."""
    while True:
        with database().transaction() as session:
            if idempotency.forget_expired(session, batch_size=BATCH) < BATCH:
                return
