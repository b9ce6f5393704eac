"""ZIP exports: thin edges over cardvault.domain.portability.exports.jobs; the archive is made by a worker."""

from __future__ import annotations

import datetime
import functools
from typing import Any

from cardvault.domain.clock import now_ms
from cardvault.domain.db import after_commit
from cardvault.domain.errors import ExportRunning
from cardvault.domain.models import ExportJob
from cardvault.domain.portability.exports import jobs as exports
from cardvault.handlers.http import runtime
from cardvault.workers.exports import CONTENT_TYPE, run_export

DOWNLOAD_URL_SECONDS = 900  # how long a downloadUrl works


def _download_url(job: ExportJob, status: str) -> str | None:
    if status != "ready" or job.object_key is None or job.expires_at is None:
        return None
    left = (job.expires_at - now_ms()) // 1000  # the URL ends with the archive, at the latest
    day = datetime.datetime.fromtimestamp(job.created_at / 1000, datetime.UTC).date().isoformat()
    return runtime.current().store.download_url(
        job.object_key,
        file_name=f"cardvault-export-{day}.zip",
        content_type=CONTENT_TYPE,
        attachment=True,
        expires_in=max(1, min(DOWNLOAD_URL_SECONDS, left)),
    )


def job_json(job: ExportJob) -> dict[str, Any]:
    status = exports.shown_status(job)
    return {
        "id": job.id,
        "status": status,
        "stage": job.stage,
        "processedCount": job.processed_count,
        "cardCount": job.card_count,
        "filesIncluded": job.files_included,
        "filesOmitted": job.files_omitted,
        "sizeBytes": job.size_bytes,
        "failureClass": job.failure_class,
        "createdAt": job.created_at,
        "updatedAt": job.updated_at,
        "completedAt": job.completed_at,
        "expiresAt": job.expires_at,
        "downloadUrl": _download_url(job, status),
    }


def start_export(user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    with runtime.current().db.transaction() as session:
        try:
            job = exports.start_export(session, account_id=user)
        except ExportRunning as running:
            # The interface's 409 carries the running job, whose shape lives at this edge.
            running.details = {**(running.details or {}), "job": job_json(running.job)}
            raise
        # Sent once the row is committed; the sweeper covers a lost send.
        after_commit(session, functools.partial(run_export.send, job.id))
        return {"job": job_json(job)}, 202, {"Location": f"/v1/exports/{job.id}"}


def get_latest_export(user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        job = exports.latest_export(session, account_id=user)
        next_start_at, _ = exports.next_start_at(session, account_id=user)
        return {
            "job": None if job is None else job_json(job),
            "canStart": next_start_at is None and (job is None or job.status not in exports.ACTIVE),
            "nextStartAt": next_start_at,
        }


def get_export(export_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        return {"job": job_json(exports.get_export(session, account_id=user, export_id=export_id))}


def cancel_export(export_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return {"job": job_json(exports.cancel_export(session, account_id=user, export_id=export_id))}
