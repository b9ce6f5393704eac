"""A link card's capture in an export archive: its files (a WebP screenshot, an MHTML archive and
a UTF-8 Markdown reader view), each checked and capped; where a restore stores them, under new
keys of the card's own; what the card records of them; and the card taking them, whose
``capture`` stage is then restored as completed rather than run again on today's page.

Every byte stored counts toward the account's stored-files quota (cardvault.domain.files.held):
the card takes the files only within it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from cardvault.adapters.capture import Limits
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidInput
from cardvault.domain.files import held
from cardvault.domain.files.quotas import Quotas
from cardvault.domain.portability import archive
from cardvault.domain.portability.restore.checks import Archive

# What each of a capture's files may hold at most, and its stored type.
MAX_BYTES = {"screenshot": 4 * 1024 * 1024, "archive": Limits().archive_bytes, "reader": 2 * 1024 * 1024}
CONTENT_TYPES = {
    "screenshot": "image/webp",
    "archive": "multipart/related",
    "reader": "text/markdown; charset=utf-8",
}
Placed = dict[str, tuple[str, bytes, str]]  # the card's column: the key, the bytes, their type


def files_of(zipped: Archive, record: Mapping[str, Any]) -> dict[str, bytes]:
    """The record's capture files (by role) out of the archive, each checked."""
    return {
        role: _read(zipped, role, record[role])
        for role in archive.CAPTURE_ROLES
        if isinstance(record.get(role), dict)
    }


def _read(zipped: Archive, role: str, file: dict[str, Any]) -> bytes:
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


def placed(
    *, account_id: str, card_id: str, lease: str, files: Mapping[str, bytes], pictures: Mapping[str, bytes]
) -> Placed:
    """Where each file is stored (the screenshot's ``pictures``, its renditions, beside it), by
    the card's column it goes to."""
    base = f"accounts/{account_id}/captures/{card_id}/{lease}"
    written: Placed = {}
    if "screenshot" in files:
        for column, data in (("screenshot_object", files["screenshot"]), *pictures.items()):
            key = f"accounts/{account_id}/renditions/{card_id}/{lease}-{column}.webp"
            written[column] = (key, data, "image/webp")
    for role, extension in (("archive", "page.mhtml"), ("reader", "reader.md")):
        if role in files:
            written[f"{role}_object"] = (f"{base}-{extension}", files[role], CONTENT_TYPES[role])
    return written


def capture_facts(record: Mapping[str, Any], files: Mapping[str, bytes]) -> dict[str, Any]:
    """What the card's ``capture`` says of its restored files."""
    capture = record["linkCapture"]  # (checked: cardvault.domain.portability.restore.checks)
    told: dict[str, Any] = {"capturedAt": capture["capturedAt"] or now_ms()}
    told.update({role: {"size": len(files[role])} for role in ("archive", "reader") if role in files})
    if "reader" in files:
        told["reader"]["wordCount"] = capture["readerWords"] or len(files["reader"].decode().split())
    return told


def restore_capture(
    session: Session,
    *,
    account_id: str,
    card_id: str,
    objects: Mapping[str, tuple[str, int]],
    facts: dict[str, Any],
    quotas: Quotas,
) -> None:
    """Give the card the capture objects an import stored (card columns to keys and bytes) and
    what they are (``capture``'s facts); QuotaExceeded, nothing kept, past the quotas."""
    card = editing.get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    for column, (key, _) in objects.items():
        setattr(card, column, key)
    card.capture = facts
    held.recount(session, card, {column: size for column, (_, size) in objects.items()}, quota=quotas)
