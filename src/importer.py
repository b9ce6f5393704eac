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
import functools
import posixpath
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from jsonschema import Draft7Validator
from referencing import Registry
from referencing.jsonschema import DRAFT7
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cardvault import import_captures as captured
from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.domain.cards import editing
from cardvault.domain.db import Database, after_commit
from cardvault.domain.errors import CardVaultError, InvalidInput
from cardvault.domain.files import captions, uploads
from cardvault.domain.models import Card
from cardvault.domain.portability import archive as archive_format
from cardvault.domain.portability import import_checks, import_jobs, imports
from cardvault.domain.portability.formats.known import detect
from cardvault.settings import Settings, spec_document
from cardvault.workers import broker as worker_broker
from cardvault.workers.imports import run_import
from cardvault.workers.pipeline import send_stage

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
    on_card: Callable[[int, int], None] = lambda done, total: None,
) -> Outcome:
    """Restore the archive at ``path`` into the account; ``on_card(done, total)`` after each card."""
    archive = import_checks.open_archive(path)
    outcome = Outcome()
    decoder = Decoder()
    servable = _servable()
    try:
        with db.transaction() as session:
            folder_ids = imports.restore_folders(session, account_id=account_id, records=archive.folders)
        outcome.folders = len(folder_ids)
        for done, raw in enumerate(archive.cards, start=1):
            made: list[str] = []  # the card, once created: removed again if a later step fails
            try:
                record = import_checks.check_record(raw, servable)
                outcome.files += _restore(db, store, decoder, archive, account_id, record, folder_ids, made)
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


def _restore(
    db: Database,
    store: BlobStore,
    decoder: Decoder,
    archive: import_checks.Archive,
    account_id: str,
    record: dict[str, Any],
    folder_ids: dict[str, str],
    made: list[str],
) -> int:
    """Restore one card (its id into ``made`` once created); return how many of its files
    were restored."""
    file, content = None, record.get("content")
    restored = 0
    if isinstance(record.get("file"), dict):
        checked = _stored(db, store, archive, account_id, record["file"], record, purpose="card")
        card_type = record.get("type")
        with db.transaction(write=False) as session:
            found = editing.check_file(
                session,
                store,
                account_id=account_id,
                file_key=checked[0],
                file_etag=checked[1],
                card_type=card_type if isinstance(card_type, str) else None,
                content=None,
            )
        file, restored = uploads.copy_for_card(store, found.checked), 1
        content = found.content if found.card_type == "text" else content
    with db.transaction() as session:
        card = imports.add_card(
            session,
            account_id=account_id,
            record=record,
            file=file,
            content=content if isinstance(content, str) else None,
            folder_ids=folder_ids,
        )
        card_id = card.id
    made.append(card_id)
    if isinstance(record.get("captions"), dict):
        upload_id, _ = _stored(
            db, store, archive, account_id, record["captions"], record, purpose="captions", card_id=card_id
        )
        with db.transaction(write=False) as session:
            checked_captions = captions.check(
                session, store, account_id=account_id, card_id=card_id, file_key=upload_id
            )
        if not isinstance(checked_captions, Card):  # Card: the file is the card's already
            attached = captions.read(store, decoder, *checked_captions, card_id=card_id)
            with db.transaction() as session:
                captions.apply(session, account_id=account_id, card_id=card_id, attached=attached)
            restored += 1
    if any(isinstance(record.get(role), dict) for role in archive_format.CAPTURE_ROLES):
        restored += captured.restore(
            db, store, decoder, archive, account_id=account_id, card_id=card_id, record=record
        )
    with db.transaction() as session:
        card_pk, queued = imports.finish_card(session, account_id=account_id, card_id=card_id, record=record)
        for stage in queued:
            after_commit(session, functools.partial(send_stage, card_pk, stage, imported=True))
    return restored


def _stored(
    db: Database,
    store: BlobStore,
    archive: import_checks.Archive,
    account_id: str,
    file: dict[str, Any],
    record: dict[str, Any],
    *,
    purpose: str,
    card_id: str | None = None,
) -> tuple[str, str]:
    """Copy a file out of the archive into a new upload of the account; its fileKey and ETag."""
    path = file.get("path")
    entry = archive.files.get(path) if isinstance(path, str) else None
    if entry is None or not isinstance(entry.get("size"), int):
        raise InvalidInput(f"The card's {purpose} file {path!r} is not in the manifest.")
    if purpose == "card":
        name, mime = record.get("fileName"), record.get("mimeType")
    else:
        facts = record.get("captionsFile")
        facts = facts if isinstance(facts, dict) else {}
        name = facts.get("fileName")
        mime = captions.CONTENT_TYPES.get(facts.get("format", ""), "text/plain")
    name = name if isinstance(name, str) and name else posixpath.basename(str(path))
    mime = mime if isinstance(mime, str) and mime else "application/octet-stream"
    with db.transaction() as session:
        if purpose == "card":
            issued = uploads.issue(
                session, store, account_id=account_id, file_name=name, file_size=entry["size"], mime_type=mime
            )
        else:
            issued = captions.issue_upload(
                session,
                store,
                account_id=account_id,
                card_id=str(card_id),
                file_name=name,
                file_size=entry["size"],
                mime_type=mime,
            )
        upload_id, key = issued.upload.id, issued.upload.object_key
    stored = store.write(key, archive.read(str(path)), content_type=mime)
    return upload_id, stored.etag


def _servable() -> import_checks.Servable:
    """Whether a value is what the API shows, by the spec's schema of it (``link``: the
    extended card's link fields, by theirs)."""
    spec = _json_schema(spec_document()[1])
    registry: Registry[Any] = Registry().with_resource(_SPEC, DRAFT7.create_resource(spec))
    fields: dict[str, Any] = {}
    for part in spec["components"]["schemas"]["DoneCard"]["allOf"]:
        target = spec["components"]["schemas"][part["$ref"].rsplit("/", 1)[1]] if "$ref" in part else part
        fields.update(target.get("properties", {}))

    def valid(schema: Any, value: Any) -> bool:
        return bool(Draft7Validator(schema, registry=registry).is_valid(value))

    def servable(name: str, value: Any) -> bool:
        if name == "link":
            return all(valid(fields[key], item) for key, item in value.items() if key in fields)
        schema = spec["components"]["schemas"][name]
        if name == "FilePreview":  # stored with the fields its kind has; shown with all, null
            value = {**dict.fromkeys(schema["properties"]), **value}
        return valid(schema, value)

    return servable


_SPEC = "urn:cardvault:spec"


def _json_schema(node: Any) -> Any:
    """The spec's schemas as JSON Schema: OpenAPI 3.0's ``nullable`` as a null type, and its
    references made absolute."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#"):
        node["$ref"] = _SPEC + node["$ref"]
    if node.pop("nullable", False) is True:
        if "type" in node:
            node["type"] = [node["type"], "null"]
        if "enum" in node and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
    return node


def run(db: Database, store: BlobStore, *, account_id: str, path: Path, out: TextIO = sys.stdout) -> int:
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
            outcome = import_archive(db, store, account_id=account_id, path=path, on_card=shown)
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
    db: Database,
    store: BlobStore,
    settings: Settings,
    *,
    account_id: str,
    path: Path,
    file_format: str | None,
    on_duplicate: str,
    out: TextIO = sys.stdout,
) -> int:
    """The command for another service's export (cardvault.domain.portability.formats): the
    file is stored and taken by the import actor in this process, a batch at a time, as a
    worker would (an import job, listed by listImports); the exit status."""
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
    worker_broker.bind(settings, db, store)
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
