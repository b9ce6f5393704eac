"""An export's run on a worker: its lease, snapshotting, archiving's heartbeat, its end, and the
clean-up after ended jobs.

A worker claims the job with a fresh lease; every later write names the lease, so a worker
whose lease was taken (it stalled and the sweeper handed the job to another) or whose job was
canceled learns so at its next heartbeat and stops, keeping nothing. Snapshotting copies the
cards, a batch per transaction, into ``export_items`` (resumable from ``cursor_pk``); archiving
reads them back and starts over when interrupted."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from cardvault.domain.annotations import records as annotation_records
from cardvault.domain.cards import reading
from cardvault.domain.clock import now_ms
from cardvault.domain.models import Card, ExportItem, ExportJob, Folder
from cardvault.domain.portability import archive
from cardvault.domain.portability.exports import jobs as exports
from cardvault.domain.portability.exports.jobs import ACTIVE

MAX_ATTEMPTS = 3  # workers that may stop mid-way before the job fails as interrupted
EXPIRE_BATCH = 100


def claim(session: Session, *, job_id: str, stale_ms: int, lease: str | None = None) -> str | None:
    """Take the job for this worker and return its lease; None when it is done, or another
    worker holds it and its heartbeat is fresh. A job that stopped MAX_ATTEMPTS times fails.

    The ``lease`` may be the caller's own: run again after its COMMIT was lost (it may have
    been saved), claim then finds the job held under that lease and returns it, as the first
    run did."""
    job = session.get(ExportJob, job_id, with_for_update=True)
    now = now_ms()
    if job is None or job.status not in ACTIVE:
        return None
    if lease is not None and job.lease == lease:
        return lease
    if job.lease is not None and job.heartbeat_at > now - stale_ms:
        return None
    if job.attempts >= MAX_ATTEMPTS:
        exports.end(session, job, "failed", "interrupted")
        return None
    lease = lease or secrets.token_hex(8)
    job.attempts += 1
    job.lease, job.heartbeat_at, job.updated_at = lease, now, now
    if job.status == "pending":
        job.status, job.stage = "running", "snapshotting"
    elif job.stage == "archiving":
        # Archiving starts over: what the stopped worker counted is forgotten with its archive.
        session.execute(update(ExportItem).where(ExportItem.job_id == job.id).values(archived=None))
        job.processed_count, job.files_included, job.files_omitted, job.files_unreadable = 0, 0, 0, 0
    return lease


def _held(session: Session, job_id: str, lease: str) -> ExportJob | None:
    """The job, locked, while it runs under this lease."""
    job = session.get(ExportJob, job_id, with_for_update=True, populate_existing=True)
    if job is None or job.status != "running" or job.lease != lease:
        return None
    return job


def release(session: Session, *, job_id: str, lease: str, counted: bool = True) -> None:
    """Give the job up after an error, so the next attempt need not wait for a stale heartbeat;
    an attempt not ``counted`` (a passing fault of the database stopped it, or it waited for
    room on a full disk: nothing of the export's own doing) gives its attempt back."""
    job = _held(session, job_id, lease)
    if job is not None:
        job.lease = None
        if not counted:
            job.attempts -= 1


def snapshot_batch(session: Session, *, job_id: str, lease: str, batch_size: int = 2000) -> bool | None:
    """Copy the next batch of the account's cards into the export; True while there are more,
    False when snapshotting is done (the job is archiving), None when the lease is lost."""
    job = _held(session, job_id, lease)
    if job is None:
        return None
    if job.stage != "snapshotting":
        return False
    cards = _cards(session, job, batch_size)
    now = now_ms()
    job.heartbeat_at = job.updated_at = now
    if not cards:
        job.stage, job.card_count = "archiving", job.processed_count
        job.processed_count, job.files_included, job.files_omitted, job.files_unreadable = 0, 0, 0, 0
        return False
    noted = annotation_records.of_cards(
        session, card_pks=[card.pk for card in cards if card.annotation_count]
    )
    rows = [
        {
            "job_id": job.id,
            "card_pk": card.pk,
            "record": {
                **archive.card_record(card),
                "annotations": [archive.annotation_record(a) for a in noted.get(card.pk, [])],
            },
            "file_object": card.file_object,
            "captions_object": card.captions_object,
            "capture_objects": archive.capture_objects(card),
        }
        for card in cards
    ]
    session.execute(insert(ExportItem), rows)  # one batched INSERT, no unit of work
    job.cursor_pk = cards[-1].pk
    job.processed_count += len(cards)
    return True


_READ = [c for c in Card.__table__.c if c.name not in ("source_text", "captions_text")]
_WITH_FILES = (
    ExportItem.file_object.is_not(None)
    | ExportItem.captions_object.is_not(None)
    | ExportItem.capture_objects.is_not(None)
)


def _cards(session: Session, job: ExportJob, limit: int) -> list[SimpleNamespace]:
    """The next cards to snapshot, read with their tags and folders in one statement, as plain
    values (ORM objects took most of the time)."""
    query = (
        select(*_READ, *reading.gathered(session.get_bind().dialect.name))
        .where(Card.account_id == job.account_id, Card.pk > job.cursor_pk, Card.pk <= job.last_card_pk)
        .order_by(Card.pk)
        .limit(limit)
    )
    cards = []
    for row in session.execute(query):
        values = dict(row._mapping)
        tags, ai_tags, folder_ids = reading.unpack(values.pop("tag_list"), values.pop("folder_list"))
        cards.append(SimpleNamespace(**values, tags=tags, ai_tags=ai_tags, folder_ids=folder_ids))
    return cards


def items(
    session: Session, *, job_id: str, after_pk: int, limit: int, with_files: bool = False
) -> Sequence[ExportItem]:
    """The next items of the export in card order (only those with a file or caption file)."""
    query = select(ExportItem).where(ExportItem.job_id == job_id, ExportItem.card_pk > after_pk)
    if with_files:
        query = query.where(_WITH_FILES)
    return session.scalars(query.order_by(ExportItem.card_pk).limit(limit)).all()


def archived(session: Session, *, job_id: str, after_pk: int, limit: int) -> list[tuple[int, dict[str, Any]]]:
    """What archiving recorded of the items' files (card pk, {role: entry}), in card order."""
    query = (
        select(ExportItem.card_pk, ExportItem.archived)
        .where(
            ExportItem.job_id == job_id,
            ExportItem.card_pk > after_pk,
            _WITH_FILES,
        )
        .order_by(ExportItem.card_pk)
        .limit(limit)
    )
    return [(pk, entries or {}) for pk, entries in session.execute(query)]


def folders(session: Session, *, account_id: str, after_id: str, limit: int) -> Sequence[Folder]:
    """The account's folders in id order, after ``after_id``."""
    query = (
        select(Folder)
        .where(Folder.account_id == account_id, Folder.id > after_id)
        .order_by(Folder.id)
        .limit(limit)
    )
    return session.scalars(query).all()


@dataclasses.dataclass
class Progress:
    """What archiving did since its last heartbeat."""

    archived: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # card pk: {role: entry}
    included: int = 0
    omitted: int = 0
    unreadable: int = 0  # of the omitted: there, but not read after retries


def heartbeat(session: Session, *, job_id: str, lease: str, progress: Progress) -> bool:
    """Record archiving's progress under the lease; False when the job was canceled or taken."""
    job = _held(session, job_id, lease)
    if job is None:
        return False
    if progress.archived:  # one UPDATE by primary key, sent as a batch
        session.execute(
            update(ExportItem),
            [
                {"job_id": job_id, "card_pk": pk, "archived": entries}
                for pk, entries in progress.archived.items()
            ],
        )
    job.processed_count = _cards_before(
        session, job_id, max(progress.archived, default=0), job.processed_count
    )
    job.files_included = (job.files_included or 0) + progress.included
    job.files_omitted = (job.files_omitted or 0) + progress.omitted
    job.files_unreadable = (job.files_unreadable or 0) + progress.unreadable
    job.heartbeat_at = job.updated_at = now_ms()
    return True


def _cards_before(session: Session, job_id: str, last_pk: int, counted: int) -> int:
    """Cards archived so far: those up to the last one whose files were written (cards without
    files take no time of their own)."""
    if not last_pk:
        return counted
    query = select(func.count()).where(ExportItem.job_id == job_id, ExportItem.card_pk <= last_pk)
    return max(counted, session.scalar(query) or 0)


def finish(session: Session, *, job_id: str, lease: str, object_key: str, size: int) -> bool:
    """Mark the job ready with its stored archive; False when the lease was lost meanwhile
    (then the caller deletes what it stored)."""
    job = _held(session, job_id, lease)
    if job is None:
        return False
    job.object_key, job.size_bytes = object_key, size
    exports.end(session, job, "ready")
    job.processed_count = job.card_count or 0
    job.expires_at = (job.completed_at or 0) + exports.RETENTION_MS
    return True


def fail(session: Session, *, job_id: str, failure_class: str, lease: str | None = None) -> None:
    """End the job as failed (under ``lease`` when given: a worker that lost it fails nothing)."""
    job = session.get(ExportJob, job_id, with_for_update=True, populate_existing=True)
    if job is None or job.status not in ACTIVE or (lease is not None and job.lease != lease):
        return
    exports.end(session, job, "failed", failure_class)


def stale(session: Session, *, older_than_ms: int) -> list[str]:
    """The pending or running jobs whose heartbeat is older than this many milliseconds."""
    cutoff = now_ms() - older_than_ms
    query = select(ExportJob.id).where(ExportJob.status.in_(ACTIVE), ExportJob.heartbeat_at < cutoff)
    return list(session.scalars(query))


def resent(session: Session, job_ids: Sequence[str], *, older_than_ms: int) -> None:
    """Record that the sweeper has sent these jobs again: one that no worker holds (pending, or
    given back) gets a fresh heartbeat, so it is sent again only when it goes another
    ``older_than_ms`` untaken (a message still waiting for a worker's one-export turn is then
    not sent again on every pass). A held job's heartbeat is its worker's to keep: a stale one
    must stay stale, so that the message sent again can take it over."""
    if job_ids:
        now = now_ms()
        session.execute(
            update(ExportJob)
            .where(
                ExportJob.id.in_(list(job_ids)),
                ExportJob.lease.is_(None),
                ExportJob.status.in_(ACTIVE),
                ExportJob.heartbeat_at < now - older_than_ms,
            )
            .values(heartbeat_at=now)
        )


def expire(session: Session) -> list[str]:
    """Mark ready jobs past their time expired; return the keys of expired jobs' archives (to
    be deleted, then forgotten with ``forget_archives``: a failed delete is tried again)."""
    now = now_ms()
    jobs = session.scalars(
        select(ExportJob)
        .where(
            ((ExportJob.status == "ready") & (ExportJob.expires_at <= now))
            | ((ExportJob.status == "expired") & ExportJob.object_key.is_not(None))
        )
        .order_by(ExportJob.expires_at)
        .limit(EXPIRE_BATCH)
        .with_for_update(skip_locked=True)
    ).all()
    for job in jobs:
        job.status, job.updated_at = "expired", now
    return [job.object_key for job in jobs if job.object_key]


def forget_items(session: Session, *, limit: int = 5000) -> int:
    """Delete a batch of the items of jobs that ended; return how many."""
    ended = select(ExportJob.id).where(ExportJob.status.not_in(ACTIVE))
    batch = (
        select(ExportItem.job_id, ExportItem.card_pk)
        .where(ExportItem.job_id.in_(ended))
        .limit(limit)
        .subquery()
    )
    pairs = session.execute(select(batch.c.job_id, batch.c.card_pk)).all()
    for job_id in {job_id for job_id, _ in pairs}:
        pks = [pk for j, pk in pairs if j == job_id]
        session.execute(delete(ExportItem).where(ExportItem.job_id == job_id, ExportItem.card_pk.in_(pks)))
    return len(pairs)


def unreferenced(session: Session, keys: Sequence[str]) -> list[str]:
    """The archives among ``keys`` that no job will use: written by an attempt that lost its
    job, or whose job ended with another archive or none."""
    unused = []
    for key in keys:
        job_id = key.rsplit("/", 1)[-1].split("-", 1)[0]
        job = session.get(ExportJob, job_id)
        if job is None or (job.status not in ACTIVE and job.object_key != key):
            unused.append(key)
    return unused


def forget_archives(session: Session, *, keys: Sequence[str]) -> None:
    """Forget archives that were deleted from the store."""
    if keys:
        session.execute(update(ExportJob).where(ExportJob.object_key.in_(keys)).values(object_key=None))


def counts(job: ExportJob, folder_count: int) -> Mapping[str, int]:
    """The manifest's counts."""
    return {
        "cards": job.card_count or 0,
        "folders": folder_count,
        "filesIncluded": job.files_included or 0,
        "filesOmitted": job.files_omitted or 0,
    }


def object_key(account_id: str, job_id: str, lease: str) -> str:
    """Where an attempt stores its archive: its own key, so two attempts never share one."""
    return f"exports/{account_id}/{job_id}-{lease}.zip"
