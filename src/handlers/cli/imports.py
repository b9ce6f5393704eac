"""``cardvault import FILE --account NAME [--format F]`` with another service's export
(cardvault.domain.portability.imports.formats): an import job run in this process. The file is
stored, and the import actor takes it a batch at a time, as a worker would; the job is listed by
listImports like one started over the API."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.imports.formats.known import detect
from cardvault.services import Services
from cardvault.workers.imports import run_import


def run(
    services: Services,
    *,
    account_id: str,
    path: Path,
    file_format: str | None,
    on_duplicate: str,
    out: TextIO = sys.stdout,
) -> int:
    """The command: import the file as a job taken by the import actor in this process, on the
    services the command was bootstrapped with (its changes reach webhooks, its stages the
    workers); the exit status."""
    db, store = services.database, services.blobs
    with path.open("rb") as file:
        head = file.read(4096)
    file_format = file_format or detect(head)
    if file_format is None:
        print(
            f"cardvault: the format of {path.name} cannot be told from its bytes: name it with --format",
            file=sys.stderr,
        )
        return 1
    import_id = import_jobs.new_import_id()
    key = f"accounts/{account_id}/imports/{import_id}/export"
    stored = store.write(key, _chunks(path), content_type="application/octet-stream")
    with db.transaction() as session:
        import_jobs.ensure_none_running(session, account_id=account_id)
        session.add(
            import_jobs.new_job(
                import_id=import_id,
                account_id=account_id,
                file_format=file_format,
                on_duplicate=on_duplicate,
                file_name=path.name[:255],
                file_size=stored.size,
                object_key=key,
            )
        )
    handed: str | None = None
    while True:
        run_import.fn(import_id, handed)
        with db.transaction(write=False) as session:
            job = import_jobs.get_import(session, account_id=account_id, import_id=import_id)
            if job.status != "running":
                break
            handed = job.lease
            print(f"read {job.found} entries", file=out, flush=True)
    print(
        f"Imported {job.created} cards ({file_format}): {job.found} entries, {job.merged} merged, "
        f"{job.skipped} skipped, {job.failed} failed; import {job.id} {job.status}.",
        file=out,
        flush=True,
    )
    for failure in job.failures:
        print(f"cardvault: {failure['entry']} was not imported: {failure['reason']}", file=sys.stderr)
    return 0 if job.status == "completed" and job.failed == 0 else 1


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        while chunk := file.read(1024 * 1024):
            yield chunk
