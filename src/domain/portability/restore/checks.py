"""Opening and checking an export archive, and each of its card records, before an import writes.

The format is cardvault.domain.portability.archive's (version 1). The archive is checked
before anything is written: its manifest, and ``cards.json`` and ``folders.json`` against
their sizes and sha256 in it. Each file is checked again as it is copied out (size and
sha256). Each card record is checked before it is restored: what the user made must be
right, and what the pipeline made is kept only when the API can show it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cardvault.adapters.ocr import MAX_TEXT_BYTES as FILE_TEXT_BYTES
from cardvault.domain import links
from cardvault.domain.errors import InvalidInput
from cardvault.domain.portability import archive

# cards.json and manifest.json are read whole (about 10x their size in memory): 256 MiB holds
# about 100,000 cards of ordinary length.
MAX_DOCUMENT_BYTES = 256 * 1024**2
MAX_MANIFEST_BYTES = 64 * 1024**2
_READ_ERRORS = (
    KeyError,
    RuntimeError,
    NotImplementedError,
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
)
_CHUNK = 1024 * 1024


@dataclasses.dataclass
class Archive:
    """An opened export whose manifest and JSON documents passed their checks."""

    zip: zipfile.ZipFile
    manifest: dict[str, Any]
    files: dict[str, dict[str, Any]]
    cards: list[dict[str, Any]]
    folders: list[dict[str, Any]]

    def read(self, path: str) -> Iterator[bytes]:
        """A file's bytes; InvalidInput at the end when they are not the manifest's."""
        entry = self.files.get(path)
        if entry is None:
            raise InvalidInput(f"The archive's manifest does not name {path!r}.")
        digest, size = hashlib.sha256(), 0
        try:
            with self.zip.open(path) as member:
                while chunk := member.read(_CHUNK):
                    size += len(chunk)
                    if size > entry["size"]:
                        raise InvalidInput(f"{path} is longer than the manifest says.")
                    digest.update(chunk)
                    yield chunk
        except _READ_ERRORS as exc:
            raise InvalidInput(f"{path} cannot be read from the archive: {exc}") from None
        if size != entry["size"] or digest.hexdigest() != entry["sha256"]:
            raise InvalidInput(f"{path} is not the file the manifest names (size or sha256 differ).")


def _bounded(zf: zipfile.ZipFile, path: str, limit: int) -> bytes:
    try:
        if zf.getinfo(path).file_size > limit:
            raise InvalidInput(f"{path} is over {limit} bytes.")
        with zf.open(path) as member:
            data = member.read(limit + 1)
    except KeyError:
        raise InvalidInput(f"The archive has no {path}.") from None
    except _READ_ERRORS as exc:
        raise InvalidInput(f"{path} cannot be read from the archive: {exc}") from None
    if len(data) > limit:
        raise InvalidInput(f"{path} is over {limit} bytes.")
    return data


def _document(
    archive_zip: zipfile.ZipFile, files: Mapping[str, dict[str, Any]], path: str, member: str
) -> list[Any]:
    entry = files.get(path)
    if entry is None or not isinstance(entry.get("size"), int):
        raise InvalidInput(f"The manifest does not name {path}.")
    data = _bounded(archive_zip, path, min(entry["size"], MAX_DOCUMENT_BYTES))
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise InvalidInput(f"{path} is not the file the manifest names (sha256 differs).")
    document = json.loads(data)
    if not isinstance(document, dict) or document.get("formatVersion") != archive.FORMAT_VERSION:
        raise InvalidInput(f"{path} is not of format version {archive.FORMAT_VERSION}.")
    records = document.get(member)
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise InvalidInput(f"{path} has no list of {member}.")
    return records


def _one_owner_per_file(cards: list[dict[str, Any]]) -> None:
    """Each file of the archive is one card's, in one role, as an export writes it: a file many
    records named would be stored again for each (a 0.5 MB archive naming one 500 MB file
    100,000 times), so such an archive is refused whole."""
    owners = {"cards.json": "the archive's list of cards", "folders.json": "the archive's list of folders"}
    for record in cards:
        for role in archive.ROLES:
            file = record.get(role)
            path = file.get("path") if isinstance(file, dict) else None
            if not isinstance(path, str):
                continue
            owner = f"the {role} of card {str(record.get('id'))[:64]}"
            if path in owners:
                raise InvalidInput(
                    f"The archive's file {path[:200]!r} is named by {owners[path]} and by {owner}:"
                    " each file of an archive belongs to one card."
                )
            owners[path] = owner


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _check_entry(zf: zipfile.ZipFile, entry: Any) -> None:
    """A manifest entry names a file of the archive, its size and its sha256."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        raise InvalidInput("The manifest has a file entry without a path.")
    path, size, sha256 = entry["path"], entry.get("size"), entry.get("sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InvalidInput(f"The manifest gives {path} no size.")
    if not isinstance(sha256, str) or _SHA256.fullmatch(sha256) is None:
        raise InvalidInput(f"The manifest gives {path} no sha256.")
    try:
        stored = zf.getinfo(path).file_size
    except KeyError:
        raise InvalidInput(f"The manifest names {path}, which the archive does not hold.") from None
    if stored != size:
        raise InvalidInput(f"{path} is not the file the manifest names (size or sha256 differ).")


def open_archive(path: Path) -> Archive:
    """Open and check an export archive (InvalidInput says what is wrong with it)."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InvalidInput(f"{path} is not a ZIP archive: {exc}") from None
    try:
        manifest = json.loads(_bounded(zf, "manifest.json", MAX_MANIFEST_BYTES))
        if not isinstance(manifest, dict) or manifest.get("formatVersion") != archive.FORMAT_VERSION:
            raise InvalidInput(f"This is not a Card Vault export of format version {archive.FORMAT_VERSION}.")
        entries = manifest.get("files")
        if not isinstance(entries, list):
            raise InvalidInput("The manifest has no list of files.")
        for entry in entries:
            _check_entry(zf, entry)
        files = {e["path"]: e for e in entries}
        cards = _document(zf, files, "cards.json", "cards")
        _one_owner_per_file(cards)
        return Archive(
            zip=zf,
            manifest=manifest,
            files=files,
            cards=cards,
            folders=_document(zf, files, "folders.json", "folders"),
        )
    except (ValueError, RecursionError, zipfile.BadZipFile) as exc:  # json's errors are ValueErrors
        zf.close()
        if isinstance(exc, InvalidInput):
            raise
        raise InvalidInput(f"The archive cannot be read: {exc}") from None


CARD_TYPES = ("text", "link", "image", "video", "audio", "document", "palette", "quote")
# As the spec's Url: absolute http(s), no spaces or control characters, at most 2,048 characters.
_URL = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://[^\x00-\x20\x7f-\x9f/?#]+([/?#][^\x00-\x20\x7f-\x9f]*)?")
_COLOR = re.compile(r"#[0-9a-f]{6}")
_TEXT_LIMIT = 1024 * 1024  # characters of a summary, transcript or title kept
_SOURCES = ("subtitles", "captions", "speech")
Servable = Callable[[str, Any], bool]  # whether the API can show this value (by its schema)


def check_record(record: Any, servable: Servable) -> dict[str, Any]:
    """The card record made safe to restore: InvalidInput when what the user made (type,
    content, URL, tags, times, files) is wrong; what the pipeline made (AI fields, link and
    file facts) is dropped when the API could not show it, and made again by its stage."""
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise InvalidInput("A card of cards.json is not an object with an id.")
    if record.get("type") not in CARD_TYPES:
        raise InvalidInput(f"The card's type {record.get('type')!r} is not a card type.")
    for field in ("content", "notes", "source", "fileName", "mimeType"):
        text_of(record, field)
    url = text_of(record, "url")
    if url is not None and (len(url) > 2048 or _URL.fullmatch(url) is None):
        raise InvalidInput("The card's url is not an http or https URL.")
    for field in ("tags", "aiTags", "folderIds"):
        strings_of(record, field)
    for field in ("createdAt", "updatedAt", "completedAt", "archivedAt", "deletedAt"):
        whole_of(record, field)
    if not isinstance(record.get("isFavorited", False), bool):
        raise InvalidInput("The card's isFavorited is not true or false.")
    for role in archive.ROLES:
        file = record.get(role)
        if file is not None and not (isinstance(file, dict) and isinstance(file.get("path"), str)):
            raise InvalidInput(f"The card's {role} does not name a path.")
    if record["type"] != "link" and any(record.get(role) is not None for role in archive.CAPTURE_ROLES):
        raise InvalidInput("Only a link card has a capture (screenshot, archive, reader view).")
    if record.get("captions") is not None:
        if record["type"] not in ("audio", "video"):
            raise InvalidInput("Only an audio or video card takes a caption file.")
        facts = record.get("captionsFile")
        if not (isinstance(facts, dict) and facts.get("format") in ("vtt", "srt")):
            raise InvalidInput("The card's captionsFile does not say its format (vtt or srt).")
    return {**record, **_derived(record, servable)}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53


def _derived(record: dict[str, Any], servable: Servable) -> dict[str, Any]:
    """The pipeline's fields of the record, each kept only when it is what the API shows."""
    kept: dict[str, Any] = {}
    found = record.get("linkCapture")
    capture: dict[str, Any] = found if isinstance(found, dict) else {}
    reader: dict[str, Any] = capture["reader"] if isinstance(capture.get("reader"), dict) else {}
    kept["linkCapture"] = {
        "capturedAt": capture.get("capturedAt") if _is_count(capture.get("capturedAt")) else None,
        "readerWords": reader.get("wordCount") if _is_count(reader.get("wordCount")) else None,
    }
    for field in ("metadataTitle", "metadataDescription", "aiSummary", "aiTranscript"):
        value = record.get(field)
        kept[field] = value if isinstance(value, str) and len(value) <= _TEXT_LIMIT else None
    text = record.get("fileText")
    facts = record.get("fileTextRead")
    read = isinstance(text, str) and len(text.encode()) <= FILE_TEXT_BYTES
    read = read and isinstance(facts, dict) and servable("OcrReader", facts)
    kept["fileText"], kept["fileTextRead"] = (text, facts) if read else (None, None)
    source = record.get("aiTranscriptSource")
    kept["aiTranscriptSource"] = source if source in _SOURCES and kept["aiTranscript"] else None
    colors = record.get("colors")
    kept["colors"] = colors if _is_palette(colors) else None
    for field in ("fileWidth", "fileHeight", "fileDurationMs"):
        value = record.get(field)
        fine = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40
        kept[field] = value if fine else None
    for field, schema in (
        ("filePreview", "FilePreview"),
        ("audioWaveform", "AudioWaveform"),
        ("aiEngine", "AiEngine"),
    ):
        value = record.get(field)
        kept[field] = value if isinstance(value, dict) and servable(schema, value) else None
    meta = record.get("linkMetadata")
    kept["linkMetadata"] = meta if _servable_link(meta, servable) else None
    return kept


def _is_palette(colors: Any) -> bool:
    return (
        isinstance(colors, list)
        and len(colors) <= 32
        and all(isinstance(c, str) and _COLOR.fullmatch(c) for c in colors)
    )


def _servable_link(meta: Any, servable: Servable) -> bool:
    if not isinstance(meta, dict):
        return False
    try:
        shown = {**links.link_json(meta), **links.done_json("link", meta, None)}
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
        return False
    return servable("link", shown)


def text_of(record: Mapping[str, Any], field: str) -> str | None:
    """The record's field when it holds a string (InvalidInput when it holds something else)."""
    value = record.get(field)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"The card's {field} is not a string.")
    return value


def strings_of(record: Mapping[str, Any], field: str) -> list[str]:
    """The record's field as a list of strings (empty when absent)."""
    value = record.get(field) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput(f"The card's {field} is not a list of strings.")
    return value


def whole_of(record: Mapping[str, Any], field: str) -> int | None:
    """A field that holds a whole number of at least 0 (a time in milliseconds, a size)."""
    value = record.get(field)
    if value is not None and (
        not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**53
    ):
        raise InvalidInput(f"The card's {field} is not a whole number of at least 0.")
    return value
