"""JSON exports: Karakeep's, Linkwarden's backup and wallabag's.

A file is parsed as a stream by ijson (yajl, in C): only the objects asked for are built, one
at a time. Karakeep and Linkwarden name their lists or collections apart from the bookmarks
that point at them, before or after them, so their files are read twice: once for the
folders (small), once for the bookmarks. Each reader's mapping:

- Karakeep (``{"bookmarks": [...], "lists": [...]}``): ``content`` a link (its URL) or a
  text note (a text card); ``createdAt`` in seconds; its manual lists as folders (a nested
  list's path from its ``parentId``); ``note``, ``tags``, ``archived``. Asset bookmarks are
  not in Karakeep's export.
- Linkwarden (the user's record with ``collections`` and ``pinnedLinks``): each collection's
  links; the collection's path (``parentId``) as the folder (its own "Unorganized": none); ``name`` the title,
  ``description`` a note, ``metaDescription`` the excerpt, ``tags`` by name, a pinned link a
  favorite, ``createdAt`` ISO 8601.
- wallabag (an array of entries): ``is_starred`` a favorite, ``is_archived`` archived,
  ``tags``, ``created_at`` ISO 8601, each annotation's ``quote`` a highlight (with its
  ``text`` after it); the stored article (``content``) and ``preview_picture`` are not kept.
"""

from __future__ import annotations

import codecs
import contextlib
import datetime
from collections.abc import Callable, Iterator
from typing import Any

import ijson

from cardvault.domain.portability.formats import Broken, Chunks, Entry, Item, Opener, seconds

MAX_DEPTH = 32  # folder ancestors followed (a cycle of parentIds ends there)


STRING_LIMIT = 4 * 1024 * 1024  # bytes of one JSON string built; a longer one is never held whole
_CUT = b'"\\u0000"'  # what a string over the limit becomes in the text the parser reads


class TooLong:
    """A value that held a string over STRING_LIMIT bytes: it was not built."""


class NotText:
    """A value that held bytes that are no text in the file's encoding (a stray Windows-1252
    byte in a UTF-8 export, say): it was not taken."""


_MARK = "\ufdd0"  # a noncharacter: what each run of undecodable bytes becomes in a string
_MARKED = "cardvault-json-marked"


def _marked(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return _MARK, error.end


codecs.register_error(_MARKED, _marked)


def _encoding(head: bytes) -> str:
    """The encoding of a JSON text from its first four bytes: its byte order mark, else the
    pattern of zero bytes RFC 4627 names (JSON begins with two ASCII characters), else UTF-8."""
    for mark, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if head.startswith(mark):
            return name
    zeros = "".join("0" if byte == 0 else "x" for byte in head[:4])
    return _BY_ZEROS.get(zeros) or _BY_ZEROS.get(zeros[:2], "utf-8")


_BY_ZEROS = {"000x": "utf-32-be", "x000": "utf-32-le", "0x": "utf-16-be", "x0": "utf-16-le"}


class _Decoded:
    """A JSON text's bytes as UTF-8 whatever its encoding (told by `_encoding`), each run of
    bytes that is no text in it replaced by U+FDD0, counted in ``marks``: a value holding one
    fails alone, and the rest of the file is read (the parser would stop at the first)."""

    def __init__(self) -> None:
        self.marks = 0

    def __call__(self, chunks: Chunks) -> Iterator[bytes]:
        head, decoder = b"", None
        for chunk in chunks:
            if decoder is None:
                head += chunk
                if len(head) < 4:
                    continue
                decoder = codecs.getincrementaldecoder(_encoding(head))(_MARKED)
                chunk, head = head, b""
            if text := decoder.decode(chunk):
                yield self._encoded(text)
        if decoder is None:
            decoder = codecs.getincrementaldecoder(_encoding(head))(_MARKED)
        if text := decoder.decode(head, final=True):
            yield self._encoded(text)

    def _encoded(self, text: str) -> bytes:
        self.marks += text.count(_MARK)
        return text.encode()


class _Strings:
    """A JSON text's bytes, each string over STRING_LIMIT bytes replaced by ``"\\u0000"`` (so
    the parser never builds it: one 200 MB string would take 200 MB, then more). A string is
    held back until it closes, up to the limit; past it, its bytes are dropped until its
    closing quote. Every step is a C search (for a quote, then the backslashes before it), so
    the cost is linear in the text whatever it holds."""

    def __init__(self) -> None:
        self.cuts = 0  # strings replaced so far
        self._held: bytearray | None = None  # the open string's bytes (None: dropping them)
        self._inside = False
        self._backslashes = 0  # the run of backslashes that ended the open string's last chunk

    def __call__(self, chunks: Chunks) -> Iterator[bytes]:
        for chunk in chunks:
            if scanned := self._scan(chunk):  # (an empty chunk would tell the parser the text ended)
                yield scanned

    def _scan(self, chunk: bytes) -> bytes:
        out, pos, size = bytearray(), 0, len(chunk)
        while pos < size:
            if not self._inside:
                quote = chunk.find(b'"', pos)
                if quote == -1:
                    out += chunk[pos:]
                    break
                out += chunk[pos:quote]
                self._inside, self._held, self._backslashes, pos = True, bytearray(b'"'), 0, quote + 1
                continue
            end = self._closing(chunk, pos)
            if end == -1:
                self._hold(chunk[pos:])
                break
            self._hold(chunk[pos : end + 1])
            if self._held is None:
                out += _CUT
                self.cuts += 1
            else:
                out += self._held
            self._inside, self._held, pos = False, None, end + 1
        return bytes(out)

    def _closing(self, chunk: bytes, start: int) -> int:
        """Where the open string's closing quote is in the chunk, or -1 (the run of backslashes
        at the chunk's end carried over)."""
        carried, at = self._backslashes, start
        while (quote := chunk.find(b'"', at)) != -1:
            before = chunk[at:quote]
            run = len(before) - len(before.rstrip(b"\\"))
            if run == len(before):
                run += carried
            if run % 2 == 0:
                return quote
            carried, at = 0, quote + 1
        tail = chunk[at:]
        run = len(tail) - len(tail.rstrip(b"\\"))
        self._backslashes = run + carried if run == len(tail) else run
        return -1

    def _hold(self, part: bytes) -> None:
        if self._held is not None:
            self._held += part
            if len(self._held) > STRING_LIMIT:
                self._held = None


def _holds(value: Any, found: Callable[[str], bool]) -> bool:
    if isinstance(value, str):
        return found(value)
    if isinstance(value, dict):
        return any(found(key) or _holds(item, found) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds(item, found) for item in value)
    return False


def objects(chunks: Chunks, prefix: str) -> Iterator[Any]:
    """The JSON values at ``prefix`` (ijson's path: ``bookmarks.item``), built one at a time:
    a value holding a string over STRING_LIMIT bytes as a TooLong, one holding bytes that are
    no text as a NotText. A file that is no JSON raises ijson.JSONError after every value
    before the fault (those the parser built from the chunk it broke in too)."""
    found: list[Any] = ijson.sendable_list()
    parser = ijson.items_coro(found, prefix, use_float=True)
    decoded, strings = _Decoded(), _Strings()
    try:
        for chunk in strings(decoded(chunks)):
            parser.send(chunk)
            yield from _checked(found, decoded.marks, strings.cuts)
            del found[:]
        parser.close()
    except ijson.JSONError:
        yield from _checked(found, decoded.marks, strings.cuts)
        raise
    yield from _checked(found, decoded.marks, strings.cuts)


def _checked(values: list[Any], marks: int, cuts: int) -> Iterator[Any]:
    for value in values:
        if cuts and _holds(value, lambda text: text == "\x00"):
            yield TooLong()
        elif marks and _holds(value, lambda text: _MARK in text):
            yield NotText()
        else:
            yield value


def stream(
    chunks: Chunks, prefix: str, place: str, make: Callable[[str, Any], Entry | None]
) -> Iterator[Item]:
    number = 0
    try:
        for value in objects(chunks, prefix):
            number += 1
            where = f"{place} {number}"
            if isinstance(value, TooLong):
                yield Broken(where, f"a value of it is over {STRING_LIMIT // 1024 // 1024} MiB: not taken")
                continue
            if isinstance(value, NotText):
                yield Broken(
                    where, "a value of it holds bytes that are no text in the file's encoding: not taken"
                )
                continue
            if not isinstance(value, dict):
                yield Broken(where, f"the {place} is no JSON object")
                continue
            entry = make(where, value)
            if entry is not None:
                yield entry
    except ijson.JSONError as exc:
        yield Broken(
            f"after {place} {number}", f"the file is no valid JSON past here ({exc}); the rest was not read"
        )


def text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def strings(value: Any) -> list[str]:
    return (
        [item.strip() for item in value if isinstance(item, str) and item.strip()]
        if isinstance(value, list)
        else []
    )


def iso(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _paths(nodes: dict[Any, tuple[str, Any]]) -> dict[Any, list[str]]:
    """Each node's path of names from its outermost ancestor (``nodes``: id to name and parent)."""
    paths = {}
    for node_id in nodes:
        path: list[str] = []
        current, seen = node_id, set()
        while current in nodes and current not in seen and len(path) < MAX_DEPTH:
            seen.add(current)
            name, current = nodes[current]
            path.insert(0, name)
        paths[node_id] = path
    return paths


def _folders(chunks: Chunks, prefix: str, kept: Callable[[dict[str, Any]], bool]) -> dict[Any, list[str]]:
    nodes: dict[Any, tuple[str, Any]] = {}
    try:
        for value in objects(chunks, prefix):
            if isinstance(value, dict) and kept(value) and isinstance(value.get("name"), str):
                nodes[value.get("id")] = (value["name"].strip(), value.get("parentId"))
    except ijson.JSONError:
        pass  # the second pass reports where the file breaks
    return _paths(nodes)


def karakeep(open_file: Opener) -> Iterator[Item]:
    """Karakeep's JSON export."""
    lists = _folders(open_file(), "lists.item", lambda value: value.get("type", "manual") == "manual")

    def make(place: str, value: dict[str, Any]) -> Entry | None:
        found = value.get("content")
        content: dict[str, Any] = found if isinstance(found, dict) else {}
        entry = Entry(place=place, title=text(value.get("title")))
        if content.get("type") == "text":
            entry.text = content.get("text") if isinstance(content.get("text"), str) else None
        else:
            entry.url = text(content.get("url"))
        note = text(value.get("note"))
        entry.notes = [note] if note else []
        entry.tags = strings(value.get("tags"))
        entry.created_at = seconds(value.get("createdAt"))
        entry.archived = value.get("archived") is True
        paths = [lists[list_id] for list_id in value.get("lists") or [] if lists.get(list_id)]
        entry.folder = paths[0] if paths else []
        if len(paths) > 1:
            entry.unmapped = ["lists (beyond the first)"]
        return entry

    return stream(open_file(), "bookmarks.item", "bookmark", make)


def linkwarden(open_file: Opener) -> Iterator[Item]:
    """Linkwarden's JSON backup."""
    collections = _folders(open_file(), "collections.item", lambda value: True)
    pinned: set[Any] = set()
    with contextlib.suppress(ijson.JSONError):  # the links' pass reports where the file breaks
        pinned.update(
            value.get("url") for value in objects(open_file(), "pinnedLinks.item") if isinstance(value, dict)
        )

    def make(place: str, value: dict[str, Any]) -> Entry | None:
        entry = Entry(place=place, url=text(value.get("url")), title=text(value.get("name")))
        note = text(value.get("description"))
        entry.notes = [note] if note else []
        entry.excerpt = text(value.get("metaDescription"))
        entry.tags = [
            tag["name"].strip()
            for tag in value.get("tags") or []
            if isinstance(tag, dict) and isinstance(tag.get("name"), str) and tag["name"].strip()
        ]
        entry.created_at = iso(value.get("createdAt"))
        folder = collections.get(value.get("collectionId"), [])
        entry.folder = [] if folder == ["Unorganized"] else folder  # Linkwarden's own first collection
        entry.favorite = entry.url is not None and entry.url in pinned
        return entry

    return stream(open_file(), "collections.item.links.item", "link", make)


def wallabag(open_file: Opener) -> Iterator[Item]:
    """wallabag's JSON export."""

    def make(place: str, value: dict[str, Any]) -> Entry | None:
        entry = Entry(place=place, url=text(value.get("url")), title=text(value.get("title")))
        entry.tags = strings(value.get("tags"))
        entry.created_at = iso(value.get("created_at"))
        entry.favorite = value.get("is_starred") in (1, True)
        entry.archived = value.get("is_archived") in (1, True)
        for annotation in value.get("annotations") or []:
            if isinstance(annotation, dict) and text(annotation.get("quote")):
                note = text(annotation.get("text"))
                entry.highlights.append(f"{text(annotation['quote'])}" + (f"\n\n{note}" if note else ""))
        entry.unmapped = [name for name in ("content", "preview_picture") if text(value.get(name))]
        return entry

    return stream(open_file(), "item", "entry", make)
