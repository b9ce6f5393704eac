"""``cardvault import ZIP --account NAME``: restore an export into an account, a card at a time
(cardvault.domain.portability.import_checks and .imports have the rules), with a progress bar
on a terminal and one plain line per step otherwise (logs, CI). A card that cannot be restored
is reported and skipped; the others are kept. The restored cards' processing (renditions,
posters, the link stages) is sent to the workers (with Redis, at once; on the embedded
default, the server's sweeper sends it when ``cardvault serve`` runs).

``cardvault import FILE --account NAME [--format F]`` with another service's export runs an
import job (cardvault.domain.portability.import_jobs) in this process: the file is stored, and
the import actor takes it a batch at a time, as a worker would; the job is listed by
listImports like one started over the API."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.domain.db import Database
from cardvault.domain.errors import CardVaultError
from cardvault.domain.files.quotas import Quotas
from cardvault.domain.portability import import_checks, import_jobs, imports
from cardvault.domain.portability.formats.known import detect
from cardvault.services import Services
from cardvault.workers import restores
from cardvault.workers.imports import run_import

PLAIN_EVERY = 100  # cards between plain progress lines


@dataclasses.dataclass
class Outcome:
    """What an import did."""

    cards: int = 0
    folders: int = 0
    files: int = 0
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (card id in the archive, why)


def import_archive(
    db: Database,
    store: BlobStore,
    *,
    account_id: str,
    path: Path,
    quotas: Quotas,
    on_card: Callable[[int, int], None] = lambda done, total: None,
) -> Outcome:
    """Restore the archive at ``path`` into the account, within its ``quotas``; ``on_card(done,
    total)`` after each card."""
    archive = import_checks.open_archive(path)
    outcome = Outcome()
    decoder = Decoder()
    servable = restores.servable()
    try:
        with db.transaction() as session:
            folder_ids = imports.restore_folders(session, account_id=account_id, records=archive.folders)
        outcome.folders = len(folder_ids)
        for done, raw in enumerate(archive.cards, start=1):
            made: list[str] = []  # the card, once created: removed again if a later step fails
            try:
                record = import_checks.check_record(raw, servable)
                outcome.files += restores.restore_card(
                    db, store, decoder, archive, account_id, record, folder_ids, made, quotas=quotas
                )
                outcome.cards += 1
            except Exception as exc:  # one card's failure, whatever it is, never stops the rest
                why = exc.message if isinstance(exc, CardVaultError) else f"{type(exc).__name__}: {exc}"
                outcome.failed.append((str(raw.get("id")), why))
                if made:
                    with db.transaction() as session:
                        imports.discard_card(session, account_id=account_id, card_id=made[0])
            on_card(done, len(archive.cards))
    finally:
        decoder.close()
        archive.zip.close()
    return outcome


def run(
    db: Database, store: BlobStore, *, account_id: str, path: Path, quotas: Quotas, out: TextIO = sys.stdout
) -> int:
    """The command: import with progress shown on ``out``; the exit status."""
    console = Console(file=out, no_color=None)
    live = console.is_terminal
    columns = (TextColumn("Importing cards"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not live) as progress:
        task = progress.add_task("cards", total=None)

        def shown(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)
            if not live and (done % PLAIN_EVERY == 0 or done == total):
                print(f"imported {done}/{total} cards", file=out, flush=True)

        try:
            outcome = import_archive(
                db, store, account_id=account_id, path=path, quotas=quotas, on_card=shown
            )
        except CardVaultError as exc:
            print(f"cardvault: {exc.message}", file=sys.stderr)
            return 1
    print(
        f"Imported {outcome.cards} cards, {outcome.folders} folders and {outcome.files} files.",
        file=out,
        flush=True,
    )
    for card_id, why in outcome.failed:
        print(f"cardvault: card {card_id} was not imported: {why}", file=sys.stderr)
    return 1 if outcome.failed else 0


def run_export_of(
    services: Services,
    *,
    account_id: str,
    path: Path,
    file_format: str | None,
    on_duplicate: str,
    out: TextIO = sys.stdout,
) -> int:
    """The command for another service's export (cardvault.domain.portability.formats): the
    file is stored and taken by the import actor in this process, a batch at a time, as a
    worker would (an import job, listed by listImports), on the services the command was
    bootstrapped with (its changes reach webhooks, its stages the workers); the exit status."""
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
