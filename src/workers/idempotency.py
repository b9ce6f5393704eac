"""The periodic deletion of Idempotency-Keys kept past their 24 hours."""

from __future__ import annotations

from cardvault.domain.guards import idempotency
from cardvault.services import Services
from cardvault.workers.broker import actor

BATCH = 5000


@actor(actor_name="forget_idempotency_keys", queue_name="housekeeping", max_retries=3, time_limit=300_000)
def forget_idempotency_keys(services: Services) -> None:
    """Delete, batch by batch, every Idempotency-Key older than 24 hours."""
    while True:
        with services.database.transaction() as session:
            if idempotency.forget_expired(session, batch_size=BATCH) < BATCH:
                return
