"""Deleting objects from the blob store: those whose cards are gone (doomed by the database's
triggers), and uploads no card took within 24 hours."""

from __future__ import annotations

from cardvault.domain.files import doomed, uploads
from cardvault.services import Services
from cardvault.workers.broker import actor

BATCH = 500


@actor(actor_name="delete_doomed_objects", queue_name="housekeeping", max_retries=5, time_limit=300_000)
def delete_doomed_objects(services: Services) -> None:
    """Delete doomed objects from the store, then forget them; a crash between the two only
    deletes them again (deleting a missing object is no error)."""
    while True:
        with services.database.transaction(write=False) as session:
            keys = doomed.doomed(session, batch_size=BATCH)
        if not keys:
            return
        services.blobs.delete(keys)
        with services.database.transaction() as session:
            doomed.forget_doomed(session, keys)
        if len(keys) < BATCH:
            return


@actor(actor_name="forget_old_uploads", queue_name="housekeeping", max_retries=3, time_limit=300_000)
def forget_old_uploads(services: Services) -> None:
    """Delete uploads older than 24 hours and doom their objects."""
    while True:
        with services.database.transaction() as session:
            if uploads.forget_old(session, batch_size=BATCH) < BATCH:
                break
    delete_doomed_objects.send()
