"""ZIP exports of an account as the API sees them: start one, read it, cancel it, its status.

The row is the truth about a job; a worker runs it (cardvault.domain.portability.exports.runs).

    pending -> running (snapshotting -> archiving) -> ready -> expired
    pending | running -> canceled | failed
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cardvault.adapters import metrics
from cardvault.domain import changes
from cardvault.domain.clock import now_ms
from cardvault.domain.db import after_commit
from cardvault.domain.errors import ExportFinished, ExportQuotaUsed
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card, ExportJob, add_alone, get_owned, refuse_while_active

WEEK_MS = 7 * 24 * 3600 * 1000
RETENTION_MS = WEEK_MS  # a ready archive is kept this long
QUOTA_MS = WEEK_MS  # one export that became ready per this long
ACTIVE = ("pending", "running")
FAILURE_CLASSES = ("storage_unavailable", "interrupted", "internal_error")


def _last_ready(session: Session, account_id: str) -> ExportJob | None:
    query = (
        select(ExportJob)
        .where(
            ExportJob.account_id == account_id,
            ExportJob.status.in_(("ready", "expired")),
            func.coalesce(ExportJob.files_unreadable, 0) == 0,
        )
        .order_by(ExportJob.completed_at.desc())
        .limit(1)
    )
    return session.scalar(query)


def next_start_at(
    session: Session, *, account_id: str, now: int | None = None
) -> tuple[int | None, str | None]:
    """When the weekly rule lets the account's next export start (None: it does not hold one
    back), and the export that holds it back."""
    last = _last_ready(session, account_id)
    now = now_ms() if now is None else now
    if last is None or last.completed_at is None or last.completed_at + QUOTA_MS <= now:
        return None, None
    return last.completed_at + QUOTA_MS, last.id


def start_export(session: Session, *, account_id: str) -> ExportJob:
    """Record an export of every card of the account, for a worker to run."""
    refuse_while_active(session, ExportJob, account_id=account_id)
    retry_at, holding = next_start_at(session, account_id=account_id)
    if retry_at is not None and holding is not None:
        raise ExportQuotaUsed(holding, retry_at=retry_at)
    now = now_ms()
    newest = session.scalar(select(func.max(Card.pk)).where(Card.account_id == account_id))
    job = ExportJob(
        id=new_id("exp"),
        account_id=account_id,
        active_account_id=account_id,
        status="pending",
        processed_count=0,
        last_card_pk=newest or 0,
        cursor_pk=0,
        attempts=0,
        created_at=now,
        updated_at=now,
        heartbeat_at=now,
    )
    add_alone(session, job)
    return job


def get_export(session: Session, *, account_id: str, export_id: str) -> ExportJob:
    """Return the account's export, or raise NotFound (also for another account's)."""
    return get_owned(session, ExportJob, row_id=export_id, account_id=account_id)


def latest_export(session: Session, *, account_id: str) -> ExportJob | None:
    """The account's most recently started export, if any."""
    query = (
        select(ExportJob)
        .where(ExportJob.account_id == account_id)
        .order_by(ExportJob.created_at.desc(), ExportJob.id.desc())
        .limit(1)
    )
    return session.scalar(query)


def shown_status(job: ExportJob, now: int | None = None) -> str:
    """The job's status as clients see it: a ready archive past its time is expired even
    before the sweeper deletes it."""
    now = now_ms() if now is None else now
    if job.status == "ready" and job.expires_at is not None and job.expires_at <= now:
        return "expired"
    return job.status


def end(session: Session, job: ExportJob, status: str, failure_class: str | None = None) -> None:
    """End the job with this status; it gives up its lease and no longer holds the account. Its
    ending is marked in the feed (webhooks tell export.ready or export.failed once)."""
    changes.note(session, account_id=job.account_id, kind="export", ids=[job.id], marks=changes.SETTLED)
    now = now_ms()
    job.status, job.stage, job.failure_class = status, None, failure_class
    job.active_account_id, job.lease = None, None
    job.completed_at = job.updated_at = now
    seconds, size = (now - job.created_at) / 1000, job.size_bytes if status == "ready" else None
    after_commit(session, lambda: metrics.job_ended("export", status, seconds, size))
    # Its items are deleted by the sweeper in batches (forget_items): a job of many cards
    # would hold the database's write lock for seconds.


def cancel_export(session: Session, *, account_id: str, export_id: str) -> ExportJob:
    """End a pending or running export as canceled; its worker stops at its next heartbeat."""
    job = get_owned(session, ExportJob, row_id=export_id, account_id=account_id, for_update=True)
    if job.status in ACTIVE:
        end(session, job, "canceled")
    elif job.status != "canceled":
        status = shown_status(job)
        raise ExportFinished(
            f"The export is {status}; there is nothing to cancel.", details={"status": status}
        )
    return job
