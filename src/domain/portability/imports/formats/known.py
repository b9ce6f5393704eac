"""The formats an import reads, by the name the API gives them, and how a file's format is told
from its first bytes when the client names none."""

from __future__ import annotations

import csv
import re

from cardvault.domain.portability.imports.formats import (
    Reader,
    decoded,
    delimited,
    documents,
    netscape,
    single_pass,
    zipped,
)

FORMATS: dict[str, Reader] = {
    "netscape": single_pass(netscape.read),
    "pocket": single_pass(delimited.pocket),  # its CSV; also its ZIP, and its HTML export before 2024
    "raindrop": single_pass(delimited.raindrop),
    "instapaper": single_pass(delimited.instapaper),
    "readwise": single_pass(delimited.readwise),
    "karakeep": documents.karakeep,
    "linkwarden": documents.linkwarden,
    "wallabag": documents.wallabag,
    "omnivore": zipped.omnivore,
}
RESTORED = "cardvault"  # our own export archive: restored whole (cardvault.workers.restores)
NAMES = (*FORMATS, RESTORED)  # every format an import takes
ZIP = b"PK\x03\x04"  # a ZIP's first local file header
# The member names that tell each ZIP format, as they show in its first local headers.
_MEMBERS = {
    "omnivore": re.compile(rb"metadata_\d+_to_\d+\.json"),
    "pocket": re.compile(rb"(?:^|/)(?:part_\d+\.csv|annotations/part_\d+\.json|collections/[^/]+\.json)"),
    # Ours (cardvault.domain.portability.archive): a card's file first, or cards.json.
    RESTORED: re.compile(
        rb"^(?:(?:files|captions|screenshots|archives|readers)/crd_[a-z0-9]+/|cards\.json$)"
    ),
}
# The header columns that tell each CSV format (a header holding all of them).
_HEADERS = {
    "raindrop": {"title", "note", "excerpt", "url", "folder", "tags", "created"},
    "readwise": {"title", "url", "document tags", "saved date", "location"},
    "instapaper": {"url", "title", "selection", "folder"},
    "pocket": {"title", "url", "time_added", "tags"},
}


def _start(head: bytes) -> str:
    """The file's first characters, in the encoding its bytes tell (as its reader will read it)."""
    text = "".join(decoded([head]))
    return text.lstrip("\ufeff \t\r\n").lower()


def _pocket_html(text: str) -> bool:
    return text.startswith("<!doctype html") and "<title>pocket export</title>" in text[:2048]


def detect(head: bytes) -> str | None:
    """The format a file starting with these bytes is in, or None when they tell none."""
    if head.startswith(ZIP):
        names = _member_names(head)
        return next((name for name, pattern in _MEMBERS.items() if any(map(pattern.search, names))), None)
    text = _start(head)
    if text.startswith("<!doctype netscape-bookmark-file-1>"):
        return "netscape"
    if _pocket_html(text):
        return "pocket"
    if text.startswith(("{", "[")):
        return _json_format(text)
    first = text.splitlines()[0] if text else ""
    try:
        columns = {name.strip() for name in next(csv.reader([first]))}
    except (csv.Error, StopIteration):
        return None
    for name, wanted in _HEADERS.items():
        if wanted <= columns:
            return name
    return None


def _member_names(head: bytes) -> list[bytes]:
    """The names of the members whose local headers begin in these bytes."""
    names, start = [], 0
    while (start := head.find(ZIP, start)) != -1 and start + 30 <= len(head):
        length = int.from_bytes(head[start + 26 : start + 28], "little")
        names.append(head[start + 30 : start + 30 + length])
        start += 30
    return names


def reader(name: str, head: bytes) -> Reader:
    """The reader of a named format; Pocket's ZIP and its old HTML export, told by their
    bytes, have readers of their own."""
    if name == "pocket" and head.startswith(ZIP):
        return zipped.pocket
    if name == "pocket" and _pocket_html(_start(head)):
        return FORMATS["netscape"]
    return FORMATS[name]


def _json_format(text: str) -> str | None:
    """Karakeep's export opens with its bookmarks or its lists, Linkwarden's backup with the
    user's fields (``uuid``, ``name``, ...), wallabag's with an array of entries."""
    compact = "".join(text[:2048].split())
    if compact.startswith(('{"bookmarks":', '{"lists":')):
        return "karakeep"
    if compact.startswith("[{") and '"is_archived":' in compact:
        return "wallabag"
    if compact.startswith("{") and ('"username":' in compact[:600] or '"collections":' in compact):
        return "linkwarden"
    return None
