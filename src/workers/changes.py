"""The periodic purge of the changes feed's changes, and of ended webhook deliveries, older than
their retention period."""

from __future__ import annotations

from cardvault.domain import changes
from cardvault.domain.clock import now_ms
from cardvault.domain.webhooks import deliveries
from cardvault.services import Services
from cardvault.workers.broker import actor

DAY_MS = 24 * 3600 * 1000


@actor(actor_name="purge_changes", queue_name="housekeeping", max_retries=3, time_limit=300_000)
def purge_changes(services: Services) -> None:
    """Delete, batch by batch, every change, and every webhook delivery that ended, older than
    CARDVAULT_CHANGES_DAYS."""
    older_than = now_ms() - int(services.settings.changes_days * DAY_MS)
    while True:
        with services.database.transaction() as session:
            # One account's batch per transaction: its counter row is locked until COMMIT.
            if not changes.purge(session, older_than=older_than, accounts=1):
                break
    while True:
        with services.database.transaction() as session:
            if not deliveries.purge(session, older_than=older_than):
                break
