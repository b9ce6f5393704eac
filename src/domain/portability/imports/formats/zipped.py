"""ZIP exports: Pocket's (2025) and Omnivore's.

- Pocket (``pocket.zip``): ``part_000000.csv``, ``part_000001.csv``, ... (10,000 saved items
  each, read as Pocket's CSV), ``annotations/part_000000.json``, ... (``[{url, title,
  highlights: [{quote, created_at}]}]``: each item's highlights, joined to its CSV row by
  ``url``) and ``collections/<slug>.json`` (Pocket's shareable lists: not imported, counted in
  ``unmapped``).
- Omnivore (``<uuid>.zip``): ``metadata_<from>_to_<to>.json`` (arrays of ``{id, slug, title,
  description, author, url, state, readingProgress, thumbnail, labels, savedAt, updatedAt,
  publishedAt}``), ``content/<slug>.html`` (the stored article: not kept) and
  ``highlights/<slug>.md`` (each highlight a ``> quote`` paragraph, then its labels as
  ``#label`` and its note; a paragraph before any quote is a note on the article).

A member may sit in one folder (a ZIP made again from the unpacked folder). Members are read
in the order of the numbers in their names, so the same file always yields the same entries.

The file is untrusted. It is copied to a temporary file and its members are read as streams,
never extracted: no path is ever made from a member's name, and a member whose name is not a
plain relative path (absolute, ``..``, a backslash, a NUL) fails alone. Before zipfile reads
the central directory it is bounded (DIRECTORY_LIMIT bytes, MEMBER_COUNT_LIMIT members); a
member's bytes are counted as they are decompressed, whatever its header claims, against
MEMBER_LIMIT and, for the whole file, TOTAL_LIMIT (a zip bomb ends at the limit, with the
entries before it taken); a member zipfile cannot read (encrypted, an unknown compression, a
bad CRC, cut short) fails alone."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

import ijson

from cardvault.domain.portability.imports.formats import (
    Broken,
    Chunks,
    Entry,
    Highlight,
    Item,
    Opener,
    delimited,
    documents,
)
from cardvault.domain.portability.imports.formats.streamed import objects

DIRECTORY_LIMIT = 8 * 1024 * 1024  # bytes of the central directory (about 60,000 members' names)
MEMBER_COUNT_LIMIT = 100_000
MEMBER_LIMIT = 512 * 1024 * 1024  # decompressed bytes of one member
TOTAL_LIMIT = 2 * 1024 * 1024 * 1024  # decompressed bytes of every member read
ANNOTATIONS_LIMIT = 32 * 1024 * 1024  # bytes of Pocket's highlights held while its CSV is read
HIGHLIGHTS_LIMIT = 1024 * 1024  # bytes of one Omnivore highlights file
_CHUNK = 256 * 1024
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError, OSError)
_FOLDER = r"(?:[^/]+/)?"  # the one folder a member may sit in
_POCKET_PART = re.compile(_FOLDER + r"part_(\d+)\.csv")
_POCKET_ANNOTATIONS = re.compile(_FOLDER + r"annotations/part_(\d+)\.json")
_POCKET_COLLECTION = re.compile(_FOLDER + r"collections/[^/]+\.json")
_OMNIVORE_METADATA = re.compile(_FOLDER + r"metadata_(\d+)_to_(\d+)\.json")
_OMNIVORE_HIGHLIGHTS = re.compile(_FOLDER + r"highlights/([^/]+)\.md")
_OMNIVORE_CONTENT = re.compile(_FOLDER + r"content/([^/]+)\.(?:html|pdf)")
_LABELS = re.compile(r"#\S+(?:\s+#\S+)*")


class _Refused(Exception):
    """The archive, or a member, is not read (its reason is the message)."""


class _Exhausted(Exception):
    """The archive's members hold more than TOTAL_LIMIT: nothing more of it is read."""


@dataclasses.dataclass
class _Archive:
    """An opened ZIP whose directory passed its bounds, and the bytes read from it so far."""

    zip: zipfile.ZipFile
    read_bytes: int = 0

    def members(self, pattern: re.Pattern[str]) -> list[tuple[tuple[int, ...], zipfile.ZipInfo]]:
        """The plain-named members whose whole name matches, by the numbers in their names."""
        found = []
        for info in self.zip.infolist():
            matched = pattern.fullmatch(info.filename)
            if matched and not info.is_dir() and _plain(info.filename):
                found.append((tuple(int(g) for g in matched.groups() if g and g.isdigit()), info))
        return sorted(found, key=lambda pair: (pair[0], pair[1].filename))

    def chunks(self, info: zipfile.ZipInfo, limit: int | None = None) -> Iterator[bytes]:
        """A member's bytes as they are decompressed: _Refused past ``limit`` (MEMBER_LIMIT),
        _Exhausted past TOTAL_LIMIT."""
        limit = MEMBER_LIMIT if limit is None else limit
        size = 0
        try:
            with self.zip.open(info) as member:
                while chunk := member.read(_CHUNK):
                    size += len(chunk)
                    self.read_bytes += len(chunk)
                    if self.read_bytes > TOTAL_LIMIT:
                        raise _Exhausted(
                            f"its members hold over {TOTAL_LIMIT:,} bytes: nothing past there is read"
                        )
                    if size > limit:
                        raise _Refused(f"it holds over {limit:,} bytes: not read past there")
                    yield chunk
        except _READ_ERRORS as exc:
            raise _Refused(f"it cannot be read from the archive ({exc})") from None


def _plain(name: str) -> bool:
    """Whether a member's name is a plain relative path (no root, drive, ``..``, backslash, NUL)."""
    parts = name.split("/")
    return not (
        name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or re.match(r"[A-Za-z]:", name)
        or any(part in ("..", ".") for part in parts)
    )


@contextlib.contextmanager
def _opened(open_file: Opener) -> Iterator[_Archive]:
    """The file copied to a temporary file and opened as a ZIP; _Refused when it is none, or
    its directory is past the bounds."""
    with tempfile.TemporaryFile() as spool:
        for chunk in open_file():
            spool.write(chunk)
        _check_directory(spool)
        try:
            archive = zipfile.ZipFile(spool)
        except _READ_ERRORS as exc:
            raise _Refused(f"the file is no ZIP archive that can be read ({exc})") from None
        with archive:
            yield _Archive(archive)


def _check_directory(spool: IO[bytes]) -> None:
    # zipfile builds an object per member of the central directory: bound it first, by what
    # the end record (zipfile's own reading of it, ZIP64 included) says.
    end_record: Callable[[IO[bytes]], Any] = zipfile._EndRecData  # type: ignore[attr-defined]
    end = end_record(spool)
    if end is None:
        raise _Refused("the file is no ZIP archive (it has no end of central directory record)")
    count, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]
    if count > MEMBER_COUNT_LIMIT or size > DIRECTORY_LIMIT:
        raise _Refused(
            f"the archive names {count} members in {size} bytes: over the {MEMBER_COUNT_LIMIT} "
            f"members or {DIRECTORY_LIMIT // 1024 // 1024} MiB an export can have"
        )


def _tricks(archive: _Archive) -> Iterator[Broken]:
    """A failure per member whose name is a path trick: such a member is never read."""
    for info in archive.zip.infolist():
        if not _plain(info.filename):
            yield Broken(
                f"member {info.filename[:200]!r}",
                "its name is not a plain path inside the archive (absolute, '..', or a backslash): not read",
            )


def _placed(member: str, items: Iterator[Item]) -> Iterator[Item]:
    """The member's items, their places prefixed with its name."""
    for item in items:
        yield dataclasses.replace(item, place=f"{member}, {item.place}")


def _guarded(open_file: Opener, read: Callable[[_Archive], Iterator[Item]]) -> Iterator[Item]:
    try:
        with _opened(open_file) as archive:
            yield from _tricks(archive)
            yield from read(archive)
    except (_Refused, _Exhausted) as refused:
        yield Broken("the file", str(refused))


def _member(
    archive: _Archive, info: zipfile.ZipInfo, read: Callable[[Chunks], Iterator[Item]]
) -> Iterator[Item]:
    """A member's items; one that breaks off is a failure after those before it."""
    try:
        yield from _placed(info.filename, read(archive.chunks(info)))
    except _Refused as refused:
        yield Broken(info.filename, str(refused))


def pocket(open_file: Opener) -> Iterator[Item]:
    """Pocket's ZIP export."""
    return _guarded(open_file, _pocket)


def _pocket(archive: _Archive) -> Iterator[Item]:
    highlights, failures = _pocket_highlights(archive)
    yield from failures
    collections = len(archive.members(_POCKET_COLLECTION))
    for _, info in archive.members(_POCKET_PART):
        for item in _member(archive, info, delimited.pocket):
            if isinstance(item, Entry):
                item.highlights = highlights.pop(item.url, []) if item.url else []
                if collections:  # counted once, on the first entry
                    item.unmapped.extend(["collections"] * collections)
                    collections = 0
            yield item
    if highlights:
        yield Broken(
            "annotations",
            f"the highlights of {len(highlights)} pages name a URL no saved item has: not kept",
        )


def _pocket_highlights(archive: _Archive) -> tuple[dict[str, list[Highlight]], list[Broken]]:
    """Each saved item's highlights by its URL, and the failures met reading them."""
    found: dict[str, list[Highlight]] = {}
    failures: list[Broken] = []
    budget = ANNOTATIONS_LIMIT
    for _, info in archive.members(_POCKET_ANNOTATIONS):

        def counted(chunks: Chunks) -> Iterator[bytes]:
            nonlocal budget
            for chunk in chunks:
                budget -= len(chunk)
                if budget < 0:
                    raise _Refused(
                        f"the highlights are over {ANNOTATIONS_LIMIT // 1024 // 1024} MiB: "
                        "those past there are not kept"
                    )
                yield chunk

        try:
            for value in objects(counted(archive.chunks(info)), "item"):
                if isinstance(value, dict) and isinstance(value.get("url"), str):
                    found_highlights = value.get("highlights")
                    quotes = [
                        h["quote"].strip()
                        for h in (found_highlights if isinstance(found_highlights, list) else [])
                        if isinstance(h, dict) and isinstance(h.get("quote"), str) and h["quote"].strip()
                    ]
                    found.setdefault(value["url"].strip(), []).extend(map(Highlight, quotes))
        except _Refused as refused:
            failures.append(Broken(info.filename, str(refused)))
        except ijson.JSONError as exc:
            failures.append(
                Broken(info.filename, f"it is no valid JSON ({exc}); its highlights past there are lost")
            )
    return found, failures


def omnivore(open_file: Opener) -> Iterator[Item]:
    """Omnivore's ZIP export."""
    return _guarded(open_file, _omnivore)


def _omnivore(archive: _Archive) -> Iterator[Item]:
    notes_of = {
        m.group(1): info
        for info in archive.zip.infolist()
        if (m := _OMNIVORE_HIGHLIGHTS.fullmatch(info.filename)) and _plain(info.filename)
    }
    stored = {
        m.group(1) for info in archive.zip.infolist() if (m := _OMNIVORE_CONTENT.fullmatch(info.filename))
    }

    def make(place: str, value: dict[str, Any]) -> Entry | None:
        entry = Entry(
            place=place, url=documents.text(value.get("url")), title=documents.text(value.get("title"))
        )
        entry.excerpt = documents.text(value.get("description"))
        entry.tags = documents.strings(value.get("labels"))
        entry.created_at = documents.iso(value.get("savedAt"))
        entry.archived = value.get("state") == "Archived"
        entry.unmapped = [
            name for name in ("author", "thumbnail", "publishedAt") if documents.text(value.get(name))
        ]
        progress = value.get("readingProgress")
        if isinstance(progress, int | float) and progress > 0:
            entry.unmapped.append("readingProgress")
        slug = value.get("slug")
        if isinstance(slug, str):
            if slug in stored:
                entry.unmapped.append("content")
            info = notes_of.get(slug)
            if info is not None:
                _omnivore_notes(archive, info, entry)
        return entry

    for _, info in archive.members(_OMNIVORE_METADATA):
        yield from _member(archive, info, lambda chunks: documents.stream(chunks, "item", "item", make))


def _omnivore_notes(archive: _Archive, info: zipfile.ZipInfo, entry: Entry) -> None:
    """An item's highlights file into its entry: each ``> quote`` paragraph a highlight (its
    note after it), a paragraph before any quote a note; ``#label`` lines are not kept."""
    try:
        text = b"".join(archive.chunks(info, HIGHLIGHTS_LIMIT)).decode("utf-8", errors="replace")
    except _Refused:
        entry.unmapped.append("highlights (unreadable)")
        return
    noted = True  # whether the last highlight has its note (none yet: nothing to note)
    for paragraph in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        block = paragraph.strip()
        if not block:
            continue
        if block.startswith(">"):
            lines = [line.removeprefix(">").strip() for line in block.splitlines()]
            entry.highlights.append(Highlight("\n".join(lines).strip()))
            noted = False
        elif _LABELS.fullmatch(block):
            entry.unmapped.append("highlight labels")
        elif not noted:
            entry.highlights[-1].note = block  # the highlight's note, after it
            noted = True
        else:
            entry.notes.append(block)
