"""The shape the account-wide jobs' actors share (imports, tag operations, exports). The job's row
is the truth about it; a run claims it under a fresh lease (a run whose lease was taken over
learns so at its next write) and takes a batch per transaction for a time slice, then hands over
to a fresh message, well inside Dramatiq's time limit. A job whose retries ran out is ended by its
giving-up actor, and the sweeper sends again every job whose heartbeat went stale."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol

import dramatiq
from sqlalchemy.orm import Session

from cardvault.services import Services
from cardvault.workers.broker import actor

# A sliced job's retries: a run that raised is tried again, backing off from 1 s to a minute.
RETRIED: dict[str, Any] = {"max_retries": 10, "min_backoff": 1_000, "max_backoff": 60_000}
GivingUp = dramatiq.Actor[[dict[str, Any], dict[str, Any]], None]


class Stale(Protocol):
    """A domain's reader of its jobs gone quiet: the ids of those whose heartbeat is older."""

    def __call__(self, session: Session, *, older_than_ms: int) -> list[str]: ...


def new_lease() -> str:
    """A fresh lease for a run of a job: the run's writes name it."""
    return secrets.token_hex(8)


def stale_ms(services: Services) -> int:
    """How long a held job's heartbeat may go quiet before another run may take it over."""
    return int(services.settings.stale_seconds * 1000)


def run_slice(step: Callable[[], bool], *, seconds: float, hand_over: Callable[[], object]) -> None:
    """Run ``step`` (a batch, in a transaction of its own) while it says the job goes on; once
    the slice of ``seconds`` is used, ``hand_over`` to a fresh message instead."""
    deadline = time.monotonic() + seconds
    while step():
        if time.monotonic() > deadline:
            hand_over()
            return


def giving_up(
    *, actor_name: str, queue_name: str, noun: str, fail: Callable[[Session, str, str], None]
) -> GivingUp:
    """Declare the actor Dramatiq sends once a job's retries ran out (the job's actor names it
    as its ``on_retry_exhausted``): ``fail(session, job_id, error)`` ends the job, saying why."""

    def gave_up(services: Services, message: dict[str, Any], retry_info: dict[str, Any]) -> None:
        error = f"The {noun} failed {retry_info.get('retries', 0)} times and was stopped."
        with services.database.transaction() as session:
            fail(session, message["args"][0], error)

    return actor(actor_name=actor_name, queue_name=queue_name, max_retries=10)(gave_up)


def resend_stale(
    services: Services, stale: Stale, send: Callable[[str], object], older_than_seconds: float
) -> list[str]:
    """Send again every job ``stale`` finds quiet for this long; their ids."""
    with services.database.transaction(write=False) as session:
        found = stale(session, older_than_ms=int(older_than_seconds * 1000))
    for job_id in found:
        send(job_id)
    return found
