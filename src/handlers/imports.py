"""Imports: thin edges over cardvault.domain.portability.imports.jobs; a worker takes the entries."""

from __future__ import annotations

import functools
from typing import Any

from cardvault.domain.db import after_commit
from cardvault.domain.errors import UnsupportedType
from cardvault.domain.files import doomed, uploads
from cardvault.domain.models import ImportJob
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.imports.formats.known import NAMES, detect
from cardvault.handlers.http import runtime
from cardvault.handlers.http.paging import page_json
from cardvault.workers.files import delete_doomed_objects
from cardvault.workers.imports import run_import


def job_json(job: ImportJob) -> dict[str, Any]:
    return {
        "id": job.id,
        "status": job.status,
        "format": job.format,
        "onDuplicate": job.on_duplicate,
        "fileName": job.file_name,
        "fileSize": job.file_size,
        "found": job.found,
        "created": job.created,
        "merged": job.merged,
        "skipped": job.skipped,
        "failed": job.failed,
        "failures": job.failures,
        "unmapped": job.unmapped,
        "error": job.error,
        "createdAt": job.created_at,
        "updatedAt": job.updated_at,
        "completedAt": job.completed_at,
    }


def start_import(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        import_jobs.ensure_none_running(session, account_id=user)  # before the file is copied
        checked = uploads.check_for_import(
            session,
            rt.store,
            account_id=user,
            file_key=body["fileKey"],
            file_etag=body["fileEtag"],
            max_file_size=import_jobs.MAX_FILE_BYTES,
        )
    file_format = body.get("format") or detect(checked.head)
    if file_format is None or file_format not in NAMES:
        raise UnsupportedType(
            "The file's format cannot be told from its bytes: name it in format "
            f"({', '.join(sorted(NAMES))}).",
        )
    import_id = import_jobs.new_import_id()
    object_key = uploads.copy_for_import(rt.store, checked, import_id=import_id)  # outside a transaction
    try:
        with rt.db.transaction() as session:
            job = import_jobs.start_import(
                session,
                account_id=user,
                checked=checked,
                import_id=import_id,
                object_key=object_key,
                file_format=file_format,
                on_duplicate=body.get("onDuplicate", "skip"),
            )
            # Sent once the row is committed; the sweeper covers a lost send.
            after_commit(session, functools.partial(run_import.send, job.id))
            after_commit(session, delete_doomed_objects.send)  # the upload's own object
            answer = {"job": job_json(job)}
    except Exception:
        with rt.db.transaction() as session:  # the copy no job took (another import won the race)
            doomed.doom(session, [object_key])
        raise
    return answer, 202, {"Location": f"/v1/imports/{import_id}"}


def get_import(import_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        return {"job": job_json(import_jobs.get_import(session, account_id=user, import_id=import_id))}


def list_imports(user: str, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        page = import_jobs.list_imports(
            session, account_id=user, secret=rt.settings.secret_key, limit=limit, cursor=cursor
        )
        return page_json([job_json(job) for job in page.jobs], page.next_cursor, None)


def cancel_import(import_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        job = import_jobs.cancel_import(session, account_id=user, import_id=import_id)
        return {"job": job_json(job)}
