"""Actors that run account-wide tag operations in batches."""

from __future__ import annotations

import time
from typing import Any

from cardvault.domain.tags import operations
from cardvault.services import Services
from cardvault.workers.broker import actor

SLICE_SECONDS = 20.0  # then hand over to a fresh message, well inside the time limit


@actor(
    actor_name="run_tag_operation",
    queue_name="tags",
    max_retries=10,
    min_backoff=1_000,
    max_backoff=60_000,
    time_limit=300_000,
    on_retry_exhausted="fail_tag_operation",
)
def run_tag_operation(services: Services, operation_id: str) -> None:
    """Apply batches of the operation until it is done or its time slice is used."""
    db, batch_size = services.database, services.settings.tag_batch_size
    deadline = time.monotonic() + SLICE_SECONDS
    while True:
        with db.transaction() as session:
            running = operations.run_tag_batch(session, operation_id=operation_id, batch_size=batch_size)
        if not running:
            return
        if time.monotonic() > deadline:
            run_tag_operation.send(operation_id)
            return


@actor(actor_name="fail_tag_operation", queue_name="tags", max_retries=10)
def fail_tag_operation(services: Services, message: dict[str, Any], retry_info: dict[str, Any]) -> None:
    """Record that an operation failed for good after its retries ran out."""
    operation_id = message["args"][0]
    with services.database.transaction() as session:
        operations.fail_tag_operation(
            session,
            operation_id=operation_id,
            error=f"The operation failed {retry_info.get('retries', 0)} times and was stopped.",
        )


def resume_stale(services: Services, older_than_seconds: float) -> int:
    """Re-send every running operation whose heartbeat is older than this; return how many."""
    with services.database.transaction(write=False) as session:
        stale = operations.stale_tag_operations(session, older_than_ms=int(older_than_seconds * 1000))
    for operation_id in stale:
        run_tag_operation.send(operation_id)
    return len(stale)
