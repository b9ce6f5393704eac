"""Actors that run account-wide tag operations in batches (cardvault.workers.sliced: the jobs'
shape): a batch per transaction, under a lock on the operation's row, for a time slice."""

from __future__ import annotations

from cardvault.domain.tags import operations
from cardvault.services import Services
from cardvault.workers import sliced
from cardvault.workers.broker import actor

SLICE_SECONDS = 20.0  # then hand over to a fresh message, well inside the time limit

fail_tag_operation = sliced.giving_up(
    actor_name="fail_tag_operation",
    queue_name="tags",
    noun="operation",
    fail=lambda session, operation_id, error: operations.fail_tag_operation(
        session, operation_id=operation_id, error=error
    ),
)


@actor(
    actor_name="run_tag_operation",
    queue_name="tags",
    time_limit=300_000,
    on_retry_exhausted=fail_tag_operation.actor_name,
    **sliced.RETRIED,
)
def run_tag_operation(services: Services, operation_id: str) -> None:
    """Apply batches of the operation until it is done or its time slice is used."""
    db, batch_size = services.database, services.settings.tag_batch_size

    def apply() -> bool:
        with db.transaction() as session:
            return operations.run_tag_batch(session, operation_id=operation_id, batch_size=batch_size)

    sliced.run_slice(apply, seconds=SLICE_SECONDS, hand_over=lambda: run_tag_operation.send(operation_id))


def resume_stale(services: Services, older_than_seconds: float) -> int:
    """Re-send every running operation whose heartbeat is older than this; return how many."""
    resent = sliced.resend_stale(
        services, operations.stale_tag_operations, run_tag_operation.send, older_than_seconds
    )
    return len(resent)
