"""CSV exports: Pocket's, Raindrop's, Instapaper's and Readwise Reader's.

A file is read a record at a time (the standard library's csv reader over the file's lines);
the header names the columns, so their order does not matter; a record that cannot be read
(more fields than the header) is a broken entry of its own, and a record over RECORD_LIMIT (a
huge field, an unclosed quote that runs on) ends the file as a broken entry. Each reader's
mapping:

- Pocket (``title,url,time_added,tags,status``; ``cursor`` between 2024 and 2025): tags split
  on ``|``, ``status`` ``archive`` archived, a title that is the URL (Pocket's stand-in) none.
- Raindrop (``id,title,note,excerpt,url,folder,tags,created,cover,highlights,favorite``):
  ``folder`` is the collection's path split on `` / `` (``Unsorted``: none), tags split on
  commas, ``created`` ISO 8601, each ``Highlight:`` paragraph a highlight, ``favorite``.
- Instapaper (``URL,Title,Selection,Folder,Timestamp,Tags``): ``Folder`` ``Unread`` none,
  ``Archive`` archived, ``Starred`` a favorite, another its folder; ``Selection`` the excerpt;
  ``Tags`` a JSON array.
- Readwise Reader (``Title,URL,ID,Document tags,Saved date,Reading progress,Location,Seen``):
  ``Document tags`` a Python list, ``Location`` ``archive`` archived; ``feed`` rows are feed
  items the reader never saved, and are not taken."""

from __future__ import annotations

import csv
import datetime
import json
import re
from collections.abc import Callable, Iterator

from cardvault.domain.portability.imports.formats import (
    Broken,
    Chunks,
    Entry,
    Highlight,
    Item,
    LineTooLong,
    lines,
    seconds,
)

RECORD_LIMIT = 1024 * 1024  # the most characters one record may span (its fields and lines)
# The csv module's own limit on a field, kept above RECORD_LIMIT: a record too long ends the
# file (after a field error in a quoted field the reader would go on mid-field, reading its
# lines as records). Process-wide, so set once, at import: no reader changes it under another.
FIELD_LIMIT = RECORD_LIMIT + 1
csv.field_size_limit(FIELD_LIMIT)


def _budgeted(source: Iterator[str], spent: list[int]) -> Iterator[str]:
    """The lines, counting their characters in ``spent[0]`` (reset by the reader after each
    record); a record past RECORD_LIMIT (an unclosed quote runs to the end of the file) raises
    LineTooLong."""
    for line in source:
        spent[0] += len(line)
        if spent[0] > RECORD_LIMIT:
            raise LineTooLong(f"a record of the file is over {RECORD_LIMIT // 1024} KiB long")
        yield line


def _records(chunks: Chunks, place: str) -> Iterator[tuple[str, dict[str, str]] | Broken]:
    """The file's records by their header's names (stripped, lower case), each with its
    place; a record that cannot be read is Broken."""
    spent = [0]
    reader = csv.reader(_budgeted(lines(chunks), spent), strict=False)
    header: list[str] | None = None
    while True:
        where = f"{place} {reader.line_num + 1}"  # where the record starts (it may span lines)
        spent[0] = 0
        try:
            row = next(reader)
        except StopIteration:
            return
        except LineTooLong as exc:
            yield Broken(where, f"{exc}; the rest of the file was not read")
            return
        except csv.Error as exc:
            yield Broken(where, f"the record cannot be read: {exc}")
            continue
        if not any(field.strip() for field in row):
            continue
        if header is None:
            header = [name.strip().lower() for name in row]
            continue
        if len(row) > len(header):
            yield Broken(
                f"{place} {reader.line_num}", f"the record has {len(row)} fields, the header {len(header)}"
            )
            continue
        yield where, dict(zip(header, row, strict=False))


def _entries(chunks: Chunks, make: Callable[[str, dict[str, str]], Entry | None]) -> Iterator[Item]:
    for record in _records(chunks, "line"):
        if isinstance(record, Broken):
            yield record
        else:
            entry = make(*record)
            if entry is not None:
                yield entry


def _text(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def _iso(value: str | None) -> int | None:
    """Epoch milliseconds of an ISO 8601 time (UTC when it names no offset)."""
    try:
        moment = datetime.datetime.fromisoformat((value or "").strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _closing(text: str, quote: str, start: int) -> int:
    """Where the string opened just before ``start`` ends (its quote, not after an odd run of
    backslashes), or -1. A run of backslashes is counted back to the quote before it at most,
    so every character is looked at once."""
    at = start
    while (found := text.find(quote, at)) != -1:
        before = text[at:found]
        if (len(before) - len(before.rstrip("\\"))) % 2 == 0:
            return found
        at = found + 1
    return -1


def _python_strings(text: str) -> list[str]:
    """The strings of a Python list's repr (``['a', "it's"]``), read without evaluating it.

    One pass: a string that never closes means no later string of its quote closes either
    (each later quote of its kind follows a backslash of the open one, so its own scan runs
    in step with it to the end), so that kind is not looked for again; and the next quote of
    each kind is kept until passed. (A regular expression retrying from each quote held the
    GIL for hours on a 1 MiB field.)"""
    found: list[str] = []
    pos, ahead = 0, {"'": text.find("'"), '"': text.find('"')}  # each kind's next quote (-1: none)
    while True:
        for quote, place in ahead.items():
            if place != -1 and place < pos:
                ahead[quote] = text.find(quote, pos)
        starts = [(place, quote) for quote, place in ahead.items() if place != -1]
        if not starts:
            break
        place, quote = min(starts)
        end = _closing(text, quote, place + 1)
        if end == -1:
            ahead[quote] = -1  # never closes: no later string of this kind does
            pos = place + 1
            continue
        value = text[place + 1 : end]
        found.append(value.replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\"))
        pos = end + 1
    return [value for value in found if value.strip()]


def pocket(chunks: Chunks) -> Iterator[Item]:
    """Pocket's CSV (a part of its ZIP, or the file alone)."""

    def make(place: str, fields: dict[str, str]) -> Entry:
        url = _text(fields.get("url"))
        title = _text(fields.get("title"))
        entry = Entry(place=place, url=url, title=None if title == url else title)
        entry.created_at = seconds(fields.get("time_added"))
        entry.tags = [tag.strip() for tag in (fields.get("tags") or "").split("|") if tag.strip()]
        entry.archived = (fields.get("status") or "").strip() == "archive"
        return entry

    return _entries(chunks, make)


def raindrop(chunks: Chunks) -> Iterator[Item]:
    """Raindrop.io's CSV."""

    def make(place: str, fields: dict[str, str]) -> Entry:
        entry = Entry(place=place, url=_text(fields.get("url")), title=_text(fields.get("title")))
        note = _text(fields.get("note"))
        entry.notes = [note] if note else []
        entry.excerpt = _text(fields.get("excerpt"))
        folder = [part.strip() for part in (fields.get("folder") or "").split(" / ") if part.strip()]
        entry.folder = [] if folder == ["Unsorted"] else folder
        entry.tags = [tag.strip() for tag in (fields.get("tags") or "").split(",") if tag.strip()]
        entry.created_at = _iso(fields.get("created"))
        entry.highlights = [
            Highlight(part.strip().removeprefix("Highlight:").strip())
            for part in re.split(r"\n\s*\n", fields.get("highlights") or "")
            if part.strip().removeprefix("Highlight:").strip()
        ]
        entry.favorite = (fields.get("favorite") or "").strip().lower() == "true"
        entry.unmapped = ["cover"] if _text(fields.get("cover")) else []
        return entry

    return _entries(chunks, make)


def instapaper(chunks: Chunks) -> Iterator[Item]:
    """Instapaper's CSV."""

    def make(place: str, fields: dict[str, str]) -> Entry:
        entry = Entry(place=place, url=_text(fields.get("url")), title=_text(fields.get("title")))
        entry.excerpt = _text(fields.get("selection"))
        folder = (fields.get("folder") or "").strip()
        entry.archived = folder == "Archive"
        entry.favorite = folder == "Starred"
        entry.folder = [folder] if folder not in ("", "Unread", "Archive", "Starred") else []
        entry.created_at = seconds(fields.get("timestamp"))
        try:
            tags = json.loads(fields.get("tags") or "[]")
        except ValueError:
            tags = []
        entry.tags = [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []
        return entry

    return _entries(chunks, make)


def readwise(chunks: Chunks) -> Iterator[Item]:
    """Readwise Reader's CSV (its documents; highlights are another export)."""

    def make(place: str, fields: dict[str, str]) -> Entry | None:
        location = (fields.get("location") or "").strip().lower()
        if location == "feed":
            return None
        entry = Entry(place=place, url=_text(fields.get("url")), title=_text(fields.get("title")))
        entry.tags = _python_strings(fields.get("document tags") or "")
        entry.created_at = _iso(fields.get("saved date"))
        entry.archived = location == "archive"
        progress = (fields.get("reading progress") or "").strip()
        entry.unmapped = ["reading progress"] if progress not in ("", "0", "0.0") else []
        return entry

    return _entries(chunks, make)
