"""The periodic purge of cards that stayed in Trash past the retention period."""

from __future__ import annotations

import dramatiq

from cardvault.domain.cards import trash
from cardvault.workers.broker import database, settings
from cardvault.workers.files import delete_doomed_objects


@dramatiq.actor(actor_name="purge_trash", queue_name="trash", max_retries=3, time_limit=300_000)
def purge_trash() -> None:
    """Delete, batch by batch, every card in Trash for longer than CARDVAULT_TRASH_DAYS."""
    retention = trash.retention_ms(settings().trash_days)
    while True:
        with database().transaction() as session:
            if trash.purge_expired(session, retention_ms=retention) < trash.PURGE_BATCH:
                break
    delete_doomed_objects.send()  # the purged cards' files
