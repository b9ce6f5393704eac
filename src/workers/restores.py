"""Restoring our own export archive's cards (cardvault.domain.portability.restore has the
rules): each card's files copied out of the archive into uploads and taken as any upload is,
its caption file attached, its capture restored (cardvault.workers.restored_captures), and
what the pipeline made kept where the API can show it. Used by ``cardvault import`` (a card at
a time, with a progress bar) and by the import actor for an archive imported over the API
(``format: cardvault``), as a job that survives its worker: the card its current entry made is
recorded with it, and removed again by the run after a killed one.

Every byte a restore stores counts toward the account's storage quotas as an upload's would: a
card whose files do not fit fails alone (QUOTA_EXCEEDED's message in the job's failures), with
nothing of it kept. An archive whose records share a file fails its checks whole."""

from __future__ import annotations

import posixpath
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator
from referencing import Registry
from referencing.jsonschema import DRAFT7
from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.domain.cards import captions, editing
from cardvault.domain.db import Database
from cardvault.domain.errors import CardLimitReached, CardVaultError, InvalidInput
from cardvault.domain.files import uploads
from cardvault.domain.files.quotas import Quotas
from cardvault.domain.models import Card
from cardvault.domain.portability import archive as archive_format
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.restore import cards as restore_cards
from cardvault.domain.portability.restore import checks as restore_checks
from cardvault.domain.portability.restore import jobs as restore_jobs
from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.spec import spec_document
from cardvault.workers.pipeline import send_after_commit
from cardvault.workers.restored_captures import restore as restore_captures

SLICE_SECONDS = 240.0  # of cards restored; then the run hands over (each slice copies the archive again)


def quotas_of(config: Settings) -> Quotas:
    """The accounts' storage quotas, as the settings set them."""
    return Quotas(config.quota_pending_bytes, config.quota_stored_bytes)


def restore_card(
    db: Database,
    store: BlobStore,
    decoder: Decoder,
    archive: restore_checks.Archive,
    account_id: str,
    record: dict[str, Any],
    folder_ids: dict[str, str],
    made: list[str],
    *,
    quotas: Quotas,
    on_made: Callable[[Session, str], None] | None = None,
    on_whole: Callable[[Session], None] | None = None,
    max_cards: int | None = None,
) -> int:
    """Restore one card (its id into ``made`` once created), its files within ``quotas``;
    return how many of its files were restored. ``on_made`` runs in the transaction that
    creates the card, ``on_whole`` in the one that finishes it (an import job's bookkeeping:
    either may raise to undo its step)."""
    file, content = None, record.get("content")
    restored = 0
    if isinstance(record.get("file"), dict):
        checked = _stored(db, store, archive, account_id, record["file"], record, quotas, purpose="card")
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
        card = restore_cards.add_card(
            session,
            account_id=account_id,
            record=record,
            file=file,
            content=content if isinstance(content, str) else None,
            folder_ids=folder_ids,
            max_cards=max_cards,
        )
        card_id = card.id
        if on_made is not None:
            on_made(session, card_id)
    made.append(card_id)
    if isinstance(record.get("captions"), dict):
        upload_id, _ = _stored(
            db,
            store,
            archive,
            account_id,
            record["captions"],
            record,
            quotas,
            purpose="captions",
            card_id=card_id,
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
        restored += restore_captures(
            db, store, decoder, archive, account_id=account_id, card_id=card_id, record=record, quota=quotas
        )
    with db.transaction() as session:
        written = restore_cards.finish_card(session, account_id=account_id, card_id=card_id, record=record)
        if on_whole is not None:
            on_whole(session)
        send_after_commit(session, written)
    return restored


def _stored(
    db: Database,
    store: BlobStore,
    archive: restore_checks.Archive,
    account_id: str,
    file: dict[str, Any],
    record: dict[str, Any],
    quotas: Quotas,
    *,
    purpose: str,
    card_id: str | None = None,
) -> tuple[str, str]:
    """Copy a file out of the archive into a new upload of the account, issued within its
    quotas as any upload is; its fileKey and ETag."""
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
                session,
                store,
                account_id=account_id,
                file_name=name,
                file_size=entry["size"],
                mime_type=mime,
                quotas=quotas,
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
                quotas=quotas,
            )
        upload_id, key = issued.upload.id, issued.upload.object_key
    stored = store.write(key, archive.read(str(path)), content_type=mime)
    return upload_id, stored.etag


def servable() -> restore_checks.Servable:
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


class _LeaseLost(Exception):
    """Another run took the job over (or it ended): this run stops, undoing its step."""


def restore_slice(
    services: Services,
    *,
    import_id: str,
    lease: str,
    position: int,
    key: str,
    max_cards: int | None = None,
) -> bool:
    """Restore the job's archive (at ``key``) from its card at ``position`` for a time slice;
    True when cards are left for the next slice. The archive is copied to a temporary file and
    checked whole first (restore_checks.open_archive): one that fails its checks fails the job."""
    db, store = services.database, services.blobs
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.zip"
        with path.open("wb") as out:
            for chunk in store.stream(key):
                out.write(chunk)
        try:
            archive = restore_checks.open_archive(path)
        except InvalidInput as exc:
            with db.transaction() as session:
                import_jobs.fail(session, import_id=import_id, error=exc.message)
            return False
        try:
            quotas = quotas_of(services.settings)
            return _restore_cards(
                db, store, services.decoder, quotas, archive, import_id, lease, position, max_cards
            )
        except _LeaseLost:
            return False
        finally:
            archive.zip.close()


def _restore_cards(
    db: Database,
    store: BlobStore,
    decoder: Decoder,
    quotas: Quotas,
    archive: restore_checks.Archive,
    import_id: str,
    lease: str,
    position: int,
    max_cards: int | None = None,
) -> bool:
    with db.transaction() as session:
        job = restore_jobs.restoring(
            session, import_id=import_id, lease=lease, start=position, found=len(archive.cards)
        )
        if job is None:
            return False
        account_id = job.account_id
        folder_ids = restore_cards.restore_folders(session, account_id=account_id, records=archive.folders)
    check = servable()
    deadline = time.monotonic() + SLICE_SECONDS
    for index in range(position, len(archive.cards)):
        if time.monotonic() > deadline:
            return True
        raw, made = archive.cards[index], list[str]()

        def made_card(session: Session, card_id: str, start: int = index) -> None:
            if not restore_jobs.card_made(
                session, import_id=import_id, lease=lease, start=start, card_id=card_id
            ):
                raise _LeaseLost

        def whole(session: Session, start: int = index) -> None:
            if not restore_jobs.card_restored(session, import_id=import_id, lease=lease, start=start):
                raise _LeaseLost

        try:
            record = restore_checks.check_record(raw, check)
            restore_card(
                db,
                store,
                decoder,
                archive,
                account_id,
                record,
                folder_ids,
                made,
                quotas=quotas,
                on_made=made_card,
                on_whole=whole,
                max_cards=max_cards,
            )
        except _LeaseLost:
            raise
        except CardLimitReached:  # as an import stops at a budget: this card and the rest are not restored
            with db.transaction() as session:
                place = f"card {str(raw.get('id'))[:64]}"
                if not restore_jobs.restore_stopped(
                    session,
                    import_id=import_id,
                    lease=lease,
                    start=index,
                    place=place,
                    max_cards=max_cards or 0,
                ):
                    raise _LeaseLost from None
            return False
        except Exception as exc:  # one card's failure, whatever it is, never stops the rest
            why = exc.message if isinstance(exc, CardVaultError) else f"{type(exc).__name__}: {exc}"
            with db.transaction() as session:
                if made:
                    restore_cards.discard_card(session, account_id=account_id, card_id=made[0])
                if not restore_jobs.card_restored(
                    session,
                    import_id=import_id,
                    lease=lease,
                    start=index,
                    failure=(f"card {str(raw.get('id'))[:64]}", why),
                ):
                    raise _LeaseLost from None
    with db.transaction() as session:
        restore_jobs.restore_completed(session, import_id=import_id, lease=lease, start=len(archive.cards))
    return False
