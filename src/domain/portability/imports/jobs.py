"""Import jobs: another service's export (cardvault.domain.portability.imports.formats) taken into an
account as cards, by a worker, a batch of entries per transaction.

    pending -> running -> completed | failed
    pending | running -> canceled

The row is the truth. ``position`` counts the entries taken, in the file's order; a batch's
cards and the job's new position and counts commit together, so a worker that dies loses its
batch only, and the next one skips ``position`` entries and goes on. A batch is taken only by
the worker that read the position it starts from (``take`` checks it under the row's lock), so
two workers never take one entry twice.

What an entry becomes: cardvault.domain.portability.imports.entries."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session

from cardvault.adapters import metrics
from cardvault.domain.cards import holdings
from cardvault.domain.clock import now_ms
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.db import after_commit
from cardvault.domain.errors import CardVaultError, ImportFinished, InvalidInput
from cardvault.domain.files import doomed, quotas, uploads
from cardvault.domain.ids import new_id
from cardvault.domain.models import ImportJob, add_alone, get_owned, refuse_while_active
from cardvault.domain.portability.imports.entries import (
    MAX_FAILURES,
    NO_BUDGET,
    Budget,
    Stopped,
    taken,
)
from cardvault.domain.portability.imports.formats import Item
from cardvault.domain.portability.imports.formats.known import NAMES
from cardvault.domain.portability.imports.turns import wait_for_turns

ACTIVE = ("pending", "running")
ON_DUPLICATE = ("skip", "merge", "create")
MAX_FILE_BYTES = 256 * 1024 * 1024  # the largest export an import takes
BATCH_SIZE = 200
DAY_MS = 24 * 3600 * 1000
PURGE_BATCH = 500  # ended imports deleted per transaction


def start_import(
    session: Session,
    *,
    account_id: str,
    checked: uploads.StoredUpload,
    import_id: str,
    object_key: str,
    file_format: str,
    on_duplicate: str,
) -> ImportJob:
    """Record an import of a checked upload (copied to ``object_key``) for a worker to run;
    the upload is taken by it."""
    ensure_none_running(session, account_id=account_id)
    if file_format not in NAMES:
        raise InvalidInput(f"{file_format!r} is no format an import reads.")
    if on_duplicate not in ON_DUPLICATE:
        raise InvalidInput(f"onDuplicate is one of {', '.join(ON_DUPLICATE)}.")
    upload = uploads.mark_taken(session, account_id=account_id, file_key=checked.upload.id)
    job = new_job(
        import_id=import_id,
        account_id=account_id,
        file_format=file_format,
        on_duplicate=on_duplicate,
        file_name=upload.file_name,
        file_size=checked.stored.size,
        object_key=object_key,
    )
    add_alone(session, job)
    quotas.count(session, account_id=account_id, pending=-upload.declared_size)
    return job


def new_import_id() -> str:
    return new_id("imp")


def new_job(
    *,
    import_id: str,
    account_id: str,
    file_format: str,
    on_duplicate: str,
    file_name: str,
    file_size: int,
    object_key: str,
) -> ImportJob:
    """A pending job over a file kept at ``object_key``, nothing taken yet."""
    now = now_ms()
    return ImportJob(
        id=import_id,
        account_id=account_id,
        active_account_id=account_id,
        status="pending",
        format=file_format,
        on_duplicate=on_duplicate,
        file_name=file_name,
        file_size=file_size,
        object_key=object_key,
        position=0,
        found=0,
        created=0,
        merged=0,
        skipped=0,
        failed=0,
        failures=[],
        unmapped={},
        attempts=0,
        created_at=now,
        updated_at=now,
        heartbeat_at=now,
    )


def ensure_none_running(session: Session, *, account_id: str) -> None:
    """Raise ImportRunning while an import into the account is pending or running."""
    refuse_while_active(session, ImportJob, account_id=account_id)


def get_import(session: Session, *, account_id: str, import_id: str) -> ImportJob:
    """Return the account's import, or raise NotFound (also for another account's)."""
    return get_owned(session, ImportJob, row_id=import_id, account_id=account_id)


@dataclasses.dataclass(frozen=True)
class ImportPage:
    jobs: list[ImportJob]
    next_cursor: str | None


def list_imports(
    session: Session, *, account_id: str, secret: str, limit: int, cursor: str | None
) -> ImportPage:
    """The account's imports, newest first."""
    scope = f"imports:{account_id}"
    query = select(ImportJob).where(ImportJob.account_id == account_id)
    if cursor is not None:
        created_at, import_id = decode_cursor(secret, cursor, scope=scope, size=2)
        query = query.where(
            (ImportJob.created_at < created_at)
            | ((ImportJob.created_at == created_at) & (ImportJob.id < import_id))
        )
    jobs = list(
        session.scalars(query.order_by(ImportJob.created_at.desc(), ImportJob.id.desc()).limit(limit + 1))
    )
    next_cursor = None
    if len(jobs) > limit:
        jobs = jobs[:limit]
        next_cursor = encode_cursor(secret, scope=scope, position=[jobs[-1].created_at, jobs[-1].id])
    return ImportPage(jobs, next_cursor)


def end(session: Session, job: ImportJob, status: str, error: str | None = None) -> None:
    """End the job with this status: it no longer holds the account, and its file is deleted."""
    now = now_ms()
    job.status, job.error, job.lease = status, error, None
    job.active_account_id = None
    job.completed_at = job.updated_at = now
    seconds, size = (now - job.created_at) / 1000, job.file_size if status == "completed" else None
    after_commit(session, lambda: metrics.job_ended("import", status, seconds, size))
    if job.object_key is not None:
        doomed.doom(session, [job.object_key])
        job.object_key = None


def cancel_import(session: Session, *, account_id: str, import_id: str) -> ImportJob:
    """End a pending or running import as canceled; its worker stops before its next batch
    (the cards of the batches taken stay)."""
    job = get_owned(session, ImportJob, row_id=import_id, account_id=account_id, for_update=True)
    if job.status in ACTIVE:
        end(session, job, "canceled")
    elif job.status != "canceled":
        raise ImportFinished(
            f"The import is {job.status}; there is nothing to cancel.", details={"status": job.status}
        )
    return job


def claim(
    session: Session, *, import_id: str, lease: str, handed: str | None, stale_ms: int
) -> ImportJob | None:
    """The job to run under ``lease``, marked running (one more attempt), or None: it ended,
    or another run holds it (its lease, not ``handed`` on by the run before, with a heartbeat
    fresher than ``stale_ms``)."""
    job = session.scalar(select(ImportJob).where(ImportJob.id == import_id).with_for_update())
    if job is None or job.status not in ACTIVE:
        return None
    now = now_ms()
    handed_over = handed is not None and handed == job.lease  # the run before ended its slice
    if job.lease is not None and not handed_over and job.heartbeat_at > now - stale_ms:
        return None
    job.attempts += 0 if handed_over else 1
    job.status, job.lease = "running", lease
    job.heartbeat_at = job.updated_at = now
    return job


def beat(session: Session, *, import_id: str, lease: str) -> bool:
    """Say the run holding ``lease`` is alive (while it skips what earlier runs took); False
    when the job ended or another run took it over."""
    job = session.scalar(select(ImportJob).where(ImportJob.id == import_id).with_for_update())
    if job is None or job.status != "running" or job.lease != lease:
        return False
    job.heartbeat_at = now_ms()
    return True


def fail(session: Session, *, import_id: str, error: str) -> None:
    """End a job whose worker gave up."""
    job = session.scalar(select(ImportJob).where(ImportJob.id == import_id).with_for_update())
    if job is not None and job.status in ACTIVE:
        end(session, job, "failed", error)


def stale(session: Session, *, older_than_ms: int) -> list[str]:
    """Active jobs whose worker has not taken a batch for this long."""
    query = select(ImportJob.id).where(
        ImportJob.status.in_(ACTIVE), ImportJob.heartbeat_at < now_ms() - older_than_ms
    )
    return list(session.scalars(query))


@dataclasses.dataclass
class Taken:
    """What ``take`` did: whether the job goes on, and the stages its new cards wait for."""

    going_on: bool
    stages: list[tuple[int, str]] = dataclasses.field(default_factory=list)


def take(
    session: Session,
    *,
    import_id: str,
    lease: str,
    start: int,
    items: Sequence[Item],
    last: bool,
    budget: Budget = NO_BUDGET,
) -> Taken:
    """Take a batch of entries, the file's entries ``start`` to ``start + len(items)``, and
    move the job past them (``last``: the file has no more, the job completes). Nothing is
    taken when the job ended, or another run holds it, or moved it (its position is not
    ``start``). Past one of the account's ``budget`` the job takes no more: it fails, its
    report saying at which entry and why (the entries before stay taken)."""
    job = session.scalar(select(ImportJob).where(ImportJob.id == import_id).with_for_update())
    if job is None or job.status != "running" or job.lease != lease or job.position != start:
        return Taken(going_on=False)
    entries_left = _entries_left(session, job, budget.entries_per_day)
    stopped = None
    if entries_left is not None and entries_left < len(items):
        stopped = Stopped(
            items[entries_left].place,
            f"not taken, nor any entry after it: the account's imports may read {budget.entries_per_day}"
            " entries a day, and those started in the last 24 hours read them; import the rest later",
        )
        items = items[:entries_left]
    cards_room = None
    if budget.max_cards is not None:
        cards_room = max(0, budget.max_cards - holdings.held(session, account_id=job.account_id))
    try:
        # The batch in one savepoint: one per entry cost a fifth of an import (bench_imports).
        with session.begin_nested():
            batch = taken(session, job, items, alone=False, budget=budget, cards_room=cards_room)
    except (CardVaultError, DataError, IntegrityError):
        # An entry failed while it was written: the savepoint rolled the batch back (the job's
        # counts too), and the batch is taken again, each entry alone.
        batch = taken(session, job, items, alone=True, budget=budget, cards_room=cards_room)
    if stopped is not None and batch.stopped is None:
        _not_taken(job, stopped)
    stopped = batch.stopped or stopped
    # Once, after the batch's other locks (the account's row is the last): read unlocked at
    # its start, the room may be passed by cards made by hand meanwhile, never by more than a
    # batch.
    holdings.take(session, account_id=job.account_id, cards=batch.made)
    wait_for_turns(session, account_id=job.account_id, stages=batch.stages)
    job.position = start + len(items)
    job.heartbeat_at = job.updated_at = now_ms()
    if stopped is not None:
        end(session, job, "failed", f"Stopped at {stopped.place}: it was {stopped.reason}.")
    elif last:
        end(session, job, "completed")
    return Taken(going_on=not last and stopped is None, stages=batch.stages)


def _entries_left(session: Session, job: ImportJob, per_day: int | None) -> int | None:
    """How many more entries the job may read today: the account's imports started in the
    last 24 hours read ``per_day`` at most, together (None: no bound)."""
    if per_day is None:
        return None
    read = session.scalar(
        select(func.coalesce(func.sum(ImportJob.found), 0)).where(
            ImportJob.account_id == job.account_id, ImportJob.created_at >= now_ms() - DAY_MS
        )
    )
    return max(0, per_day - int(read or 0))


def _not_taken(job: ImportJob, stopped: Stopped) -> None:
    """Report the entry a budget stopped the job at as failed, with why."""
    job.found += 1
    job.failed += 1
    if len(job.failures) < MAX_FAILURES:
        job.failures = [*job.failures, {"entry": stopped.place, "reason": stopped.reason[:500]}]


def purge_ended(session: Session, *, older_than: int, limit: int = PURGE_BATCH) -> int:
    """Delete up to ``limit`` imports that ended before ``older_than`` (their reports and
    failures with them); return how many."""
    ended = list(
        session.scalars(
            select(ImportJob.id)
            .where(ImportJob.completed_at < older_than, ImportJob.status.not_in(ACTIVE))
            .order_by(ImportJob.completed_at)
            .limit(limit)
        )
    )
    if ended:
        session.execute(delete(ImportJob).where(ImportJob.id.in_(ended)))
    return len(ended)
