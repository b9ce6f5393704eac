"""The periodic purge of cards that stayed in Trash past the retention period."""

from __future__ import annotations

from cardvault.domain.cards import trash
from cardvault.services import Services
from cardvault.workers.broker import actor
from cardvault.workers.files import delete_doomed_objects


@actor(actor_name="purge_trash", queue_name="trash", max_retries=3, time_limit=300_000)
def purge_trash(services: Services) -> None:
    """Delete, batch by batch, every card in Trash for longer than CARDVAULT_TRASH_DAYS."""
    retention = trash.retention_ms(services.settings.trash_days)
    while True:
        with services.database.transaction() as session:
            if trash.purge_expired(session, retention_ms=retention) < trash.PURGE_BATCH:
                break
    delete_doomed_objects.send()  # the purged cards' files
