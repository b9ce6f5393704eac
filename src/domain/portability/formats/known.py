"""The formats an import reads, by the name the API gives them, and how a file's format is told
from its first bytes when the client names none."""

from __future__ import annotations

import csv

from cardvault.domain.portability.formats import Reader, decoded, delimited, documents, netscape, single_pass

FORMATS: dict[str, Reader] = {
    "netscape": single_pass(netscape.read),
    "pocket": single_pass(delimited.pocket),  # its CSV; its HTML export before 2024 is Netscape-like
    "raindrop": single_pass(delimited.raindrop),
    "instapaper": single_pass(delimited.instapaper),
    "readwise": single_pass(delimited.readwise),
    "karakeep": documents.karakeep,
    "linkwarden": documents.linkwarden,
    "wallabag": documents.wallabag,
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


def reader(name: str, head: bytes) -> Reader:
    """The reader of a named format; Pocket's old HTML export, told by its bytes, is read as
    a Netscape file."""
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
