"""JSON exports: Karakeep's, Linkwarden's backup and wallabag's.

A file is parsed as a stream by ijson (yajl, in C): only the objects asked for are built, one
at a time. Karakeep and Linkwarden name their lists or collections apart from the bookmarks
that point at them, before or after them, so their files are read twice: once for the
folders (small), once for the bookmarks. Each reader's mapping:

- Karakeep (``{"bookmarks": [...], "lists": [...]}``): ``content`` a link (its URL) or a
  text note (a text card); ``createdAt`` in seconds; its manual lists as folders (a nested
  list's path from its ``parentId``); ``note``, ``tags``, ``archived``, each of its
  ``highlights`` (``text``, ``note``, ``color``) an annotation. Asset bookmarks are not in
  Karakeep's export.
- Linkwarden (the user's record with ``collections`` and ``pinnedLinks``): each collection's
  links; the collection's path (``parentId``) as the folder (its own "Unorganized": none); ``name`` the title,
  ``description`` a note, ``metaDescription`` the excerpt, ``tags`` by name, a pinned link a
  favorite, ``createdAt`` ISO 8601.
- wallabag (an array of entries): ``is_starred`` a favorite, ``is_archived`` archived,
  ``tags``, ``created_at`` ISO 8601, each annotation's ``quote`` an annotation (its ``text``
  the annotation's note); the stored article (``content``) and ``preview_picture`` are not kept.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Iterator
from typing import Any

import ijson

from cardvault.domain.portability.imports.formats import (
    Broken,
    Chunks,
    Entry,
    Highlight,
    Item,
    Opener,
    seconds,
)
from cardvault.domain.portability.imports.formats.streamed import (
    STRING_LIMIT,
    NotText,
    TooBig,
    TooLong,
    objects,
)

MAX_DEPTH = 32  # folder ancestors followed (a cycle of parentIds ends there)
FOLDERS_LIMIT = 10_000  # lists or collections a file's folders are made of; those past it are not kept
FOLDER_TEXT_LIMIT = 1024 * 1024  # characters of their names together
PINNED_LIMIT = 100_000  # Linkwarden's pinned links kept (as favorites)
_ID = (str, int)  # what an id or a parent's id is in the formats' files


class WrongType(Exception):
    """A field of an entry holds a value of a type its format never writes there (a list for
    an id, a number for a list): the entry fails alone."""

    def __init__(self, field: str, wanted: str) -> None:
        super().__init__(f"its {field} is no {wanted}: not taken")


def identifier(value: Any, field: str) -> str | int | None:
    """An id field's value (a string or a whole number; None when it has none)."""
    if value is None or (isinstance(value, _ID) and not isinstance(value, bool)):
        return value
    raise WrongType(field, "id")


def listed(value: Any, field: str) -> list[Any]:
    """A list field's items (none when it has none)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise WrongType(field, "list")


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
            elif isinstance(value, NotText):
                yield Broken(
                    where, "a value of it holds bytes that are no text in the file's encoding: not taken"
                )
            elif isinstance(value, TooBig):
                yield Broken(where, f"{value.reason}, more than any export's entry: not taken")
            elif not isinstance(value, dict):
                yield Broken(where, f"the {place} is no JSON object")
            else:
                try:
                    entry = make(where, value)
                except WrongType as wrong:
                    yield Broken(where, str(wrong))
                    continue
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


def _folders(
    chunks: Chunks, prefix: str, place: str, kept: Callable[[dict[str, Any]], bool], passed: str = ""
) -> tuple[dict[Any, list[str]], list[Broken]]:
    """The folders' paths by id, and a failure per folder that cannot be one (a wrong-typed
    id) or is past FOLDERS_LIMIT or FOLDER_TEXT_LIMIT (its entries are taken without it)."""
    nodes: dict[Any, tuple[str, Any]] = {}
    failures: list[Broken] = []
    number = characters = 0
    try:
        for value in objects(chunks, prefix, frozenset((passed,))):
            number += 1
            if not (isinstance(value, dict) and kept(value) and isinstance(value.get("name"), str)):
                continue
            try:
                node = identifier(value.get("id"), "id"), identifier(value.get("parentId"), "parentId")
            except WrongType as wrong:
                failures.append(Broken(f"{place} {number}", str(wrong)))
                continue
            characters += len(value["name"])
            if len(nodes) >= FOLDERS_LIMIT or characters > FOLDER_TEXT_LIMIT:
                failures.append(
                    Broken(
                        f"{place} {number}",
                        f"the file's {place}s are over {FOLDERS_LIMIT:,} or their names over "
                        f"{FOLDER_TEXT_LIMIT // 1024 // 1024} MiB: this one and those after it are "
                        "not kept (their entries are taken without them)",
                    )
                )
                break
            nodes[node[0]] = (value["name"].strip(), node[1])
    except ijson.JSONError:
        pass  # the second pass reports where the file breaks
    return _paths(nodes), failures


# Karakeep's highlight colours as the annotations' palette's.
_KARAKEEP_COLORS = {"yellow": "yellow", "red": "pink", "green": "green", "blue": "blue"}


def karakeep(open_file: Opener) -> Iterator[Item]:
    """Karakeep's JSON export."""
    lists, failures = _folders(
        open_file(), "lists.item", "list", lambda value: value.get("type", "manual") == "manual"
    )

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
        entry.highlights = [
            Highlight(quote, text(h.get("note")), _KARAKEEP_COLORS.get(str(h.get("color"))))
            for h in listed(value.get("highlights"), "highlights")
            if isinstance(h, dict) and (quote := text(h.get("text")))
        ]
        ids = [identifier(list_id, "lists") for list_id in listed(value.get("lists"), "lists")]
        paths = [lists[list_id] for list_id in ids if lists.get(list_id)]
        entry.folder = paths[0] if paths else []
        if len(paths) > 1:
            entry.unmapped = ["lists (beyond the first)"]
        return entry

    yield from failures
    yield from stream(open_file(), "bookmarks.item", "bookmark", make)


def _pinned(open_file: Opener) -> set[str]:
    """The URLs of Linkwarden's pinned links (the first PINNED_LIMIT)."""
    pinned: set[str] = set()
    with contextlib.suppress(ijson.JSONError):  # the links' pass reports where the file breaks
        for value in objects(open_file(), "pinnedLinks.item"):
            if isinstance(value, dict) and isinstance(value.get("url"), str):
                pinned.add(value["url"][:4096])
                if len(pinned) >= PINNED_LIMIT:
                    break
    return pinned


def linkwarden(open_file: Opener) -> Iterator[Item]:
    """Linkwarden's JSON backup."""
    collections, failures = _folders(
        open_file(), "collections.item", "collection", lambda value: True, passed="links"
    )
    pinned = _pinned(open_file)

    def make(place: str, value: dict[str, Any]) -> Entry | None:
        entry = Entry(place=place, url=text(value.get("url")), title=text(value.get("name")))
        note = text(value.get("description"))
        entry.notes = [note] if note else []
        entry.excerpt = text(value.get("metaDescription"))
        entry.tags = [
            tag["name"].strip()
            for tag in listed(value.get("tags"), "tags")
            if isinstance(tag, dict) and isinstance(tag.get("name"), str) and tag["name"].strip()
        ]
        entry.created_at = iso(value.get("createdAt"))
        folder = collections.get(identifier(value.get("collectionId"), "collectionId"), [])
        entry.folder = [] if folder == ["Unorganized"] else folder  # Linkwarden's own first collection
        entry.favorite = entry.url is not None and entry.url[:4096] in pinned
        return entry

    yield from failures
    yield from stream(open_file(), "collections.item.links.item", "link", make)


def wallabag(open_file: Opener) -> Iterator[Item]:
    """wallabag's JSON export."""

    def make(place: str, value: dict[str, Any]) -> Entry | None:
        entry = Entry(place=place, url=text(value.get("url")), title=text(value.get("title")))
        entry.tags = strings(value.get("tags"))
        entry.created_at = iso(value.get("created_at"))
        entry.favorite = value.get("is_starred") in (1, True)
        entry.archived = value.get("is_archived") in (1, True)
        for annotation in listed(value.get("annotations"), "annotations"):
            if isinstance(annotation, dict) and text(annotation.get("quote")):
                quote = text(annotation["quote"])
                assert quote is not None
                entry.highlights.append(Highlight(quote, text(annotation.get("text"))))
        entry.unmapped = [name for name in ("content", "preview_picture") if text(value.get(name))]
        return entry

    return stream(open_file(), "item", "entry", make)
