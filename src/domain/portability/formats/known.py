"""The formats an import reads, by the name the API gives them, and how a file's format is told
from its first bytes when the client names none."""

from __future__ import annotations

import csv

from cardvault.domain.portability.formats import Reader, delimited, netscape

FORMATS: dict[str, Reader] = {
    "netscape": netscape.read,
    "pocket": delimited.pocket,  # its CSV; its HTML export before 2024 is Netscape-like
    "raindrop": delimited.raindrop,
    "instapaper": delimited.instapaper,
    "readwise": delimited.readwise,
}
# The header columns that tell each CSV format (a header holding all of them).
_HEADERS = {
    "raindrop": {"title", "note", "excerpt", "url", "folder", "tags", "created"},
    "readwise": {"title", "url", "document tags", "saved date", "location"},
    "instapaper": {"url", "title", "selection", "folder"},
    "pocket": {"title", "url", "time_added", "tags"},
}


def _start(head: bytes) -> str:
    return head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n").lower()


def _pocket_html(text: str) -> bool:
    return text.startswith("<!doctype html") and "<title>pocket export</title>" in text[:2048]


def detect(head: bytes) -> str | None:
    """The format a file starting with these bytes is in, or None when they tell none."""
    text = _start(head)
    if text.startswith("<!doctype netscape-bookmark-file-1>"):
        return "netscape"
    if _pocket_html(text):
        return "pocket"
    first = text.splitlines()[0] if text else ""
    try:
        columns = {name.strip() for name in next(csv.reader([first]))}
    except (csv.Error, StopIteration):
        return None
    for name, wanted in _HEADERS.items():
        if wanted <= columns:
            return name
    return None


def reader(name: str, head: bytes) -> Reader:
    """The reader of a named format; Pocket's old HTML export, told by its bytes, is read as
    a Netscape file."""
    if name == "pocket" and _pocket_html(_start(head)):
        return netscape.read
    return FORMATS[name]
