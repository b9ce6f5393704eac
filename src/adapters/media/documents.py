"""Documents (in the decoder's child): a PDF's page count, its first page (as 1200, 256 and 48 px
WebP) and its text; an office file's counts (pages, words, slides, sheets: as the file states
them, or counted from its parts) and its text; an archive's entry, file and folder counts and
declared size, from its index alone (a ZIP declaring more than MAX_ENTRIES entries: its declared
count alone); a text or source file's excerpt and line count. Nothing is extracted to disk, and
every part of a ZIP is read at most up to a limit (and all of them to another), so a ZIP bomb
costs its limit."""

from __future__ import annotations

import re
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

from cardvault.adapters.media import MediaRefused
from cardvault.adapters.renditions import three_sizes

TEXT_KEEP = 20_000  # characters of a document's text kept (the AI stage's input)
TEXT_PAGES = 50  # of a PDF, the pages whose text is read
EXCERPT_CHARS = 2_000
PART_BYTES = 8 * 1024 * 1024  # of one part of an office file, the most read (decompressed)
OFFICE_BYTES = 32 * 1024 * 1024  # of all its parts together
OFFICE_PARTS = 200  # of its slide parts, the most read
MAX_ENTRIES = 100_000  # of an archive's index, the most entries counted
TEXT_BYTES = 10 * 1000 * 1000


def pdf(path: str) -> tuple[dict[str, Any], list[bytes]]:
    """A PDF's page count, first page and text."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The PDF cannot be read: {exc}") from None
    try:
        pages = len(document)
        if pages == 0:
            raise MediaRefused("DOCUMENT_UNREADABLE", "The PDF has no page.")
        first = document[0]
        width, height = first.get_size()
        scale = min(1200 / max(width, height, 1), 4.0)
        picture = first.render(scale=scale).to_pil()
        text: list[str] = []
        for index in range(min(pages, TEXT_PAGES)):
            if sum(map(len, text)) >= TEXT_KEEP:
                break
            page = document[index]
            textpage = page.get_textpage()
            text.append(textpage.get_text_range())
            textpage.close()
            page.close()
    except pdfium.PdfiumError as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The PDF cannot be read: {exc}") from None
    finally:
        document.close()
    facts = {"preview": {"kind": "pdf", "pageCount": pages}, "text": _kept("\n".join(text))}
    return facts, three_sizes(picture)


_XML_TAG = re.compile(r"<[^<>]{0,2000}>")  # (no "<" inside: linear on "<<<<")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_OOXML_PARTS = {  # a kind of office file: where its text is, and what it counts
    "word": (re.compile(r"^word/document\.xml$"), None),
    "ppt": (re.compile(r"^ppt/slides/slide\d+\.xml$"), "slideCount"),
    "xl": (re.compile(r"^xl/sharedStrings\.xml$"), None),
}
_SHEETS = re.compile(r"^xl/worksheets/sheet\d+\.xml$")
_APP_FACTS = {"Pages": "pageCount", "Words": "wordCount", "Slides": "slideCount"}
_ODF_FACTS = {"page-count": "pageCount", "word-count": "wordCount", "table-count": "sheetCount"}


def office(path: str, mime_type: str) -> dict[str, Any]:
    """An office file's counts and text, from its parts (each read up to PART_BYTES)."""
    preview: dict[str, Any] = {"kind": "office"}
    try:
        declared = _zip_entries(path)
        if declared is not None and declared > MAX_ENTRIES:
            raise MediaRefused(
                "DOCUMENT_UNREADABLE", f"The office file has {declared} parts; at most {MAX_ENTRIES}."
            )
        with zipfile.ZipFile(path) as archive_file:
            names = archive_file.namelist()
            if "content.xml" in names:  # OpenDocument
                meta = _part(archive_file, "meta.xml") if "meta.xml" in names else ""
                for name, field in _ODF_FACTS.items():
                    found = re.search(rf'meta:{name}="(\d{{1,9}})"', meta)
                    if found:
                        preview[field] = int(found.group(1))
                text = _xml_text(_part(archive_file, "content.xml"))
            else:
                text = _ooxml(archive_file, names, preview)
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,
        RuntimeError,
        zlib.error,
    ) as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The office file cannot be read: {exc}") from None
    return {"preview": preview, "text": _kept(text)}


def _ooxml(archive_file: zipfile.ZipFile, names: list[str], preview: dict[str, Any]) -> str:
    app = _part(archive_file, "docProps/app.xml") if "docProps/app.xml" in names else ""
    for tag, field in _APP_FACTS.items():
        found = re.search(rf"<{tag}>(\d{{1,9}})</{tag}>", app)
        if found:
            preview[field] = int(found.group(1))
    sheets = sum(1 for name in names if _SHEETS.match(name))
    if sheets:
        preview["sheetCount"] = sheets
    texts: list[str] = []
    for pattern, counted in _OOXML_PARTS.values():
        parts = sorted((n for n in names if pattern.match(n)), key=_natural)
        if counted and parts:
            preview[counted] = len(parts)
        budget = OFFICE_BYTES
        for name in parts[:OFFICE_PARTS]:
            if sum(map(len, texts)) >= TEXT_KEEP or budget <= 0:
                break
            xml = _part(archive_file, name, min(PART_BYTES, budget))
            budget -= len(xml)
            texts.append(_xml_text(xml))
    return "\n".join(texts)


def _natural(name: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", name)
    return (int(digits[-1]) if digits else 0, name)


def _part(archive_file: zipfile.ZipFile, name: str, limit: int = PART_BYTES) -> str:
    with archive_file.open(name) as part:
        return part.read(limit).decode("utf-8", errors="replace")


def _xml_text(xml: str) -> str:
    spaced = xml.replace("</w:p>", "\n").replace("</a:p>", "\n").replace("</text:p>", "\n")
    text = _XML_TAG.sub(" ", spaced)
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&")):
        text = text.replace(entity, char)
    return "\n".join(line.strip() for line in _SPACES.sub(" ", text).splitlines() if line.strip())


def archive(path: str, mime_type: str) -> dict[str, Any]:
    """An archive's counts, from its index (ZIP, EPUB, tar); a gzip file's declared size."""
    preview: dict[str, Any] = {"kind": "archive"}
    try:
        declared = _zip_entries(path) if mime_type in ("application/zip", "application/epub+zip") else None
        if declared is not None and declared > MAX_ENTRIES:  # its index is not read (its size)
            preview["entryCount"] = declared
        elif mime_type in ("application/zip", "application/epub+zip"):
            with zipfile.ZipFile(path) as archive_file:
                entries = archive_file.infolist()[:MAX_ENTRIES]
                folders = sum(1 for entry in entries if entry.is_dir())
                preview.update(
                    entryCount=len(entries),
                    directoryCount=folders,
                    fileCount=len(entries) - folders,
                    uncompressedBytes=min(sum(entry.file_size for entry in entries), 2**63 - 1),
                )
        elif mime_type == "application/x-tar":
            _tar_counts(path, preview)
        elif mime_type == "application/gzip":
            with open(path, "rb") as raw:  # the last member's size, modulo 4 GiB (RFC 1952)
                raw.seek(-4, 2)
                preview["uncompressedBytes"] = int.from_bytes(raw.read(4), "little")
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The archive cannot be read: {exc}") from None
    return {"preview": preview, "text": None}


_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"


def _zip_entries(path: str) -> int | None:
    """The entry count a ZIP's end record declares (ZIP64's when it has one), read from its
    last 64 KiB without reading its index; None when there is no such record."""
    with open(path, "rb") as raw:
        size = raw.seek(0, 2)
        start = max(0, size - 65_536 - 22)
        raw.seek(start)
        tail = raw.read()
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) < at + 22:
            return None
        count = int.from_bytes(tail[at + 10 : at + 12], "little")
        locator = tail.rfind(_ZIP64_LOCATOR, 0, at)
        if count == 0xFFFF and locator >= 0 and len(tail) >= locator + 20:
            record = int.from_bytes(tail[locator + 8 : locator + 16], "little")
            if 0 <= record < size:
                raw.seek(record)
                zip64 = raw.read(56)
                if zip64[:4] == b"PK\x06\x06" and len(zip64) >= 40:
                    count = int.from_bytes(zip64[32:40], "little")
        return count


def _tar_counts(path: str, preview: dict[str, Any]) -> None:
    entries = files = folders = size = 0
    with tarfile.open(path, "r:") as archive_file:  # headers only: it seeks past the contents
        for member in archive_file:
            entries += 1
            files += member.isfile()
            folders += member.isdir()
            size += member.size if member.isfile() and member.size > 0 else 0
            if entries >= MAX_ENTRIES:
                break
    preview.update(entryCount=entries, fileCount=files, directoryCount=folders, uncompressedBytes=size)


def text_file(path: str) -> dict[str, Any]:
    """A text or source file's excerpt, line count and text."""
    with Path(path).open("rb") as file:
        raw = file.read(TEXT_BYTES)
    text = raw.decode("utf-8", errors="replace")
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    preview = {"kind": "text", "excerpt": text[:EXCERPT_CHARS], "lineCount": lines}
    return {"preview": preview, "text": _kept(text)}


def _kept(text: str | None) -> str | None:
    text = (text or "").strip()
    return text[:TEXT_KEEP] or None
