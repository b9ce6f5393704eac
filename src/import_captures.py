"""Restoring a link card's capture from an export archive (for cardvault.importer): its
screenshot (a WebP, decoded in the decoder's child, which makes its 256 px and 48 px renditions
again), its archive (MHTML) and its reader view (UTF-8 Markdown), each checked and capped, stored
under new keys of the card's own and recorded in the card, whose ``capture`` stage is then
restored as completed rather than run again on today's page.

Every byte stored counts toward the account's stored-files quota (cardvault.domain.files.held):
the room is checked before the files are written and taken when the card records them; a
capture past the quota is refused (the card fails alone) and its written files are doomed."""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path
from typing import Any

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.capture import Limits
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.images import ImageRefused
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidInput
from cardvault.domain.files import doomed, quotas
from cardvault.domain.portability import archive, import_checks, imports

# What each of a capture's files may hold at most, and its stored type.
MAX_BYTES = {"screenshot": 4 * 1024 * 1024, "archive": Limits().archive_bytes, "reader": 2 * 1024 * 1024}
CONTENT_TYPES = {
    "screenshot": "image/webp",
    "archive": "multipart/related",
    "reader": "text/markdown; charset=utf-8",
}


def restore(
    db: Database,
    store: BlobStore,
    decoder: Decoder,
    zipped: import_checks.Archive,
    *,
    account_id: str,
    card_id: str,
    record: dict[str, Any],
    quota: quotas.Quotas,
) -> int:
    """Store the record's capture files and give them to the card; return how many files
    (QuotaExceeded when they would take the account past ``quota``)."""
    files = {
        role: _read(zipped, role, record[role])
        for role in archive.CAPTURE_ROLES
        if isinstance(record.get(role), dict)
    }
    pictures = _pictures(decoder, files["screenshot"]) if "screenshot" in files else {}
    with db.transaction(write=False) as session:  # no byte written past the quota
        needed = sum(map(len, files.values())) + sum(map(len, pictures.values()))
        quotas.ensure_fits(session, account_id=account_id, stored=needed, quotas=quota)
    lease = secrets.token_hex(16)
    base = f"accounts/{account_id}/captures/{card_id}/{lease}"
    written: dict[str, tuple[str, bytes, str]] = {}  # column: key, bytes, type
    if "screenshot" in files:
        for column, data in (("screenshot_object", files["screenshot"]), *pictures.items()):
            key = f"accounts/{account_id}/renditions/{card_id}/{lease}-{column}.webp"
            written[column] = (key, data, "image/webp")
    for role, extension in (("archive", "page.mhtml"), ("reader", "reader.md")):
        if role in files:
            written[f"{role}_object"] = (f"{base}-{extension}", files[role], CONTENT_TYPES[role])
    capture = record["linkCapture"]  # (checked: import_checks)
    facts: dict[str, Any] = {"capturedAt": capture["capturedAt"] or now_ms()}
    facts.update({role: {"size": len(files[role])} for role in ("archive", "reader") if role in files})
    if "reader" in files:
        facts["reader"]["wordCount"] = capture["readerWords"] or len(files["reader"].decode().split())
    try:
        for key, data, content_type in written.values():
            store.put(key, data, content_type=content_type)
        with db.transaction() as session:
            objects = {column: (key, len(data)) for column, (key, data, _) in written.items()}
            imports.restore_capture(
                session, account_id=account_id, card_id=card_id, objects=objects, facts=facts, quotas=quota
            )
    except BaseException:  # what was written belongs to nobody
        with db.transaction() as session:
            doomed.doom(session, [key for key, _, _ in written.values()])
        raise
    return len(files)


def _read(zipped: import_checks.Archive, role: str, file: dict[str, Any]) -> bytes:
    """A capture file's bytes out of the archive, within its cap and of its kind."""
    path = file.get("path")
    entry = zipped.files.get(path) if isinstance(path, str) else None
    if entry is None or not isinstance(entry.get("size"), int):
        raise InvalidInput(f"The card's {role} file {path!r} is not in the manifest.")
    if entry["size"] > MAX_BYTES[role]:
        raise InvalidInput(f"The card's {role} file is over {MAX_BYTES[role]} bytes.")
    data = b"".join(zipped.read(str(path)))
    if role == "screenshot" and not (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        raise InvalidInput("The card's screenshot is not a WebP picture.")
    if role == "reader":
        try:
            data.decode()
        except UnicodeDecodeError:
            raise InvalidInput("The card's reader view is not UTF-8 text.") from None
    return data


def _pictures(decoder: Decoder, screenshot: bytes) -> dict[str, bytes]:
    """The screenshot's 256 px and 48 px renditions, made in the decoder's child."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        path = Path(workdir) / "screenshot.webp"
        path.write_bytes(screenshot)
        try:
            made = decoder.renditions(path, large=False)
        except ImageRefused as refused:
            raise InvalidInput(f"The card's screenshot cannot be read: {refused}") from None
    return {"screenshot_compact_object": made.compact, "screenshot_placeholder_object": made.placeholder}
