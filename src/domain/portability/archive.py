"""The export archive's format (version 1): what a card and a folder look like in
``cards.json`` and ``folders.json``, where each file goes in the ZIP, and the JSON documents
written a piece at a time. Exports write it (cardvault.workers.exports) and imports read it
(cardvault.domain.portability.restore.checks); the spec's ``startExport`` describes it for people."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from cardvault.domain import links
from cardvault.domain.models import Annotation, Card, Folder

FORMAT_VERSION = 1
# A card's files, each under a folder of its own in the archive: its file, its caption file, and
# what a capture kept of a link's page.
ROLES = ("file", "captions", "screenshot", "archive", "reader")
_FOLDERS = {
    "file": "files",
    "captions": "captions",
    "screenshot": "screenshots",
    "archive": "archives",
    "reader": "readers",
}
# The capture's roles: the card's column, and the file's name in the archive.
CAPTURE_ROLES = {
    "screenshot": ("screenshot_object", "screenshot.webp"),
    "archive": ("archive_object", "page.mhtml"),
    "reader": ("reader_object", "reader.md"),
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_NAME = 120


def safe_name(name: str | None) -> str:
    """A file name any file system takes: compatibility-decomposed, runs of other characters
    as ``-``, no leading dot or dash (nothing hidden, no option), at most 120 characters
    (keeping the extension), ``file`` when nothing is left."""
    folded = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode()
    cleaned = re.sub(r"-{2,}", "-", _UNSAFE.sub("-", folded)).lstrip(".-")
    if len(cleaned) > MAX_NAME:
        stem, dot, extension = cleaned.rpartition(".")
        if dot and 0 < len(extension) <= 16:
            cleaned = stem[: MAX_NAME - len(extension) - 1].rstrip(".-") + "." + extension
        else:
            cleaned = cleaned[:MAX_NAME]
    return cleaned or "file"


def file_path(role: str, card_id: str, name: str | None) -> str:
    """Where a card's file (one of ROLES) goes: unique, since card ids are."""
    return f"{_FOLDERS[role]}/{card_id}/{safe_name(name)}"


def card_record(card: Card | Any) -> dict[str, Any]:
    """The card (or its values, named as on Card) as ``cards.json`` shows it: every field a
    client can read, except URLs (which would have expired) and its files' paths (ROLES), set
    once archiving knows them."""
    return {
        "id": card.id,
        "type": card.type,
        "content": card.content,
        "notes": card.notes,
        "url": card.url,
        "source": card.source,
        "tags": card.tags,
        "aiTags": card.ai_tags,
        "isFavorited": card.is_favorited,
        "folderIds": card.folder_ids,
        "createdAt": card.created_at,
        "updatedAt": card.updated_at,
        "completedAt": card.completed_at,
        "archivedAt": card.archived_at,
        "deletedAt": card.deleted_at,
        "fileName": card.file_name,
        "fileSize": card.file_size,
        "mimeType": card.mime_type,
        "fileKind": card.file_kind,
        "fileExtension": card.file_extension,
        "fileLanguage": card.file_language,
        "fileWidth": card.file_width,
        "fileHeight": card.file_height,
        "fileDurationMs": card.duration_ms,
        "filePreview": card.file_preview,
        "metadataTitle": card.metadata_title,
        "metadataDescription": card.metadata_description,
        **links.link_json(card.link_meta),
        "linkMetadata": card.link_meta,
        "aiSummary": card.ai_summary,
        "aiTranscript": card.ai_transcript,
        "aiTranscriptSource": card.transcript_source,
        "fileText": card.file_text,
        "fileTextRead": card.ocr_facts,
        "aiEngine": card.ai_engine,
        "colors": card.colors,
        "audioWaveform": card.waveform,
        "captionsFile": card.captions,
        "linkCapture": card.capture,
        "annotations": [],  # its annotation_records, set by the export's snapshot
        **dict.fromkeys(ROLES),
    }


def annotation_record(annotation: Annotation) -> dict[str, Any]:
    """An annotation as a card record of ``cards.json`` holds it (in the card's text order)."""
    placed = annotation.start is not None
    return {
        "quote": annotation.quote,
        "prefix": annotation.prefix,
        "suffix": annotation.suffix,
        "position": (
            {"source": annotation.source, "start": annotation.start, "end": annotation.end}
            if placed
            else None
        ),
        "orphaned": annotation.orphaned,
        "note": annotation.note,
        "color": annotation.color,
        "createdAt": annotation.created_at,
        "updatedAt": annotation.updated_at,
    }


def capture_objects(card: Card | Any) -> dict[str, str] | None:
    """The card's capture objects by role (None when it has none)."""
    found = {role: getattr(card, column) for role, (column, _) in CAPTURE_ROLES.items()}
    return {role: key for role, key in found.items() if key is not None} or None


def folder_record(folder: Folder) -> dict[str, Any]:
    """A folder as ``folders.json`` shows it."""
    return {
        "id": folder.id,
        "name": folder.name,
        "color": folder.color,
        "kind": folder.kind,
        "createdAt": folder.created_at,
        "updatedAt": folder.updated_at,
    }


def json_document(member: str, records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """``{"formatVersion": 1, "<member>": [...]}`` one record at a time, so a document of any
    length is written in constant memory."""
    yield b'{"formatVersion":%d,"%s":[' % (FORMAT_VERSION, member.encode())
    yield from _items(records)
    yield b"\n]}\n"


def _items(entries: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """A JSON array's items, one line each."""
    for index, entry in enumerate(entries):
        yield (b",\n" if index else b"\n") + orjson.dumps(entry)


def manifest(
    *,
    export_id: str,
    created_at: int,
    counts: dict[str, int],
    files: Iterable[dict[str, Any]],
    omitted: Iterable[dict[str, Any]],
) -> Iterator[bytes]:
    """``manifest.json``, written last: counts, and every file's path, size and sha256."""
    head = {"formatVersion": FORMAT_VERSION, "exportId": export_id, "createdAt": created_at, "counts": counts}
    yield orjson.dumps(head)[:-1] + b',"files":['
    yield from _items(files)
    yield b'\n],"omitted":['
    yield from _items(omitted)
    yield b"\n]}\n"
