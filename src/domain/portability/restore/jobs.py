"""A restore of our own archive (format RESTORED) on its import job's row: a card at a time,
by cardvault.workers.restores, each step only while the run holding the job's lease is on it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.models import ImportJob
from cardvault.domain.portability.imports.entries import MAX_FAILURES, Stopped, cards_stop
from cardvault.domain.portability.imports.jobs import end
from cardvault.domain.portability.restore import cards as restore_cards


def _held(session: Session, import_id: str, lease: str, start: int) -> ImportJob | None:
    """The job, locked, if the run holding ``lease`` still works on it at ``start``."""
    job = session.scalar(select(ImportJob).where(ImportJob.id == import_id).with_for_update())
    if job is None or job.status != "running" or job.lease != lease or job.position != start:
        return None
    return job


def restoring(session: Session, *, import_id: str, lease: str, start: int, found: int) -> ImportJob | None:
    """Begin a run's slice of a restore: the job (None when this run no longer holds it), with
    ``found`` the archive's cards, and the half-made card of a run killed mid-card removed."""
    job = _held(session, import_id, lease, start)
    if job is None:
        return None
    job.found = found
    if job.restoring_card_id is not None:
        restore_cards.discard_card(session, account_id=job.account_id, card_id=job.restoring_card_id)
        job.restoring_card_id = None
    job.heartbeat_at = job.updated_at = now_ms()
    return job


def card_made(session: Session, *, import_id: str, lease: str, start: int, card_id: str) -> bool:
    """Record the card the entry at ``start`` made, in the transaction that made it (False:
    this run no longer holds the job, and the card is to be rolled back)."""
    job = _held(session, import_id, lease, start)
    if job is None:
        return False
    job.restoring_card_id = card_id
    job.heartbeat_at = now_ms()
    return True


def card_restored(
    session: Session, *, import_id: str, lease: str, start: int, failure: tuple[str, str] | None = None
) -> bool:
    """Move the job past the entry at ``start``: restored whole, in the transaction that
    finished its card, or failed (``failure``: its place and why, its card removed in this
    transaction). False when this run no longer holds the job."""
    job = _held(session, import_id, lease, start)
    if job is None:
        return False
    job.position = start + 1
    job.restoring_card_id = None
    if failure is None:
        job.created += 1
    else:
        job.failed += 1
        if len(job.failures) < MAX_FAILURES:
            job.failures = [*job.failures, {"entry": failure[0], "reason": failure[1][:500]}]
    job.heartbeat_at = job.updated_at = now_ms()
    return True


def restore_stopped(
    session: Session, *, import_id: str, lease: str, start: int, place: str, max_cards: int
) -> bool:
    """End a restore at the card at ``start``, which the account had no room for (it holds
    ``max_cards``), as an import stops at a budget: that card reported failed with why, the
    job failed, the cards before it kept. False when this run no longer holds the job."""
    job = _held(session, import_id, lease, start)
    if job is None:
        return False
    stopped = Stopped(place, cards_stop(max_cards, "restored", "card"))
    job.restoring_card_id = None
    job.failed += 1
    if len(job.failures) < MAX_FAILURES:
        job.failures = [*job.failures, {"entry": stopped.place, "reason": stopped.reason[:500]}]
    end(session, job, "failed", f"Stopped at {stopped.place}: it was {stopped.reason}.")
    return True


def restore_completed(session: Session, *, import_id: str, lease: str, start: int) -> None:
    """End a restore whose run took every card (``start``: how many there are)."""
    job = _held(session, import_id, lease, start)
    if job is not None:
        end(session, job, "completed")
