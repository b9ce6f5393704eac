"""Netscape bookmark files, as Chrome, Edge, Firefox, Safari, Pinboard and Raindrop write them
(``<!DOCTYPE NETSCAPE-Bookmark-file-1>``), and Pocket's HTML export before October 2024.

A folder is an ``<H3>`` followed by its ``<DL>``; a bookmark is an ``<A HREF>`` (``ADD_DATE`` in
seconds, ``TAGS`` comma-separated); a ``<DD>`` after it is its note (Pinboard's description,
Raindrop's note), and Raindrop writes each highlight in the ``<DD>`` as a ``<blockquote>``.
Raindrop's ``DATA-IMPORTANT="true"`` marks a favorite. The browsers' own top folders (Chrome's
and Edge's bar, Firefox's toolbar and Other Bookmarks: ``PERSONAL_TOOLBAR_FOLDER`` and
``UNFILED_BOOKMARKS_FOLDER``), and Raindrop's "Unsorted" (a top folder it dates 0), are no
folder of ours: their bookmarks are taken without one.
Pocket's file lists its items under "Unread" and "Read Archive" headings: the second are
archived.

The file is read with the standard library's streaming HTML parser, a chunk at a time, in
the encoding its bytes tell (cardvault.domain.portability.imports.formats.decoded). A construct the
parser has to hold unfinished (an unclosed comment or tag) may grow to PENDING_LIMIT
characters, and CLOSE_LIMIT at the end of the file (the parser's close() is slow on more):
past that the rest of the file is one broken entry, so no file costs more than a few passes
over its bytes. A title, note or highlight keeps its first TEXT_LIMIT characters."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from html.parser import HTMLParser

from cardvault.domain.portability.imports.formats import (
    Broken,
    Chunks,
    Entry,
    Highlight,
    Item,
    decoded,
    seconds,
)

PENDING_LIMIT = 64 * 1024
CLOSE_LIMIT = 4096  # unfinished markup at the end that the parser may finish (its close() is slow)
TEXT_LIMIT = 65_536  # characters of one title, note or highlight kept
FOLDER_DEPTH = 8  # folder names kept of a bookmark's path (the job keeps fewer)
_BROWSER_ROOTS = ("personal_toolbar_folder", "unfiled_bookmarks_folder")
_UNMAPPED = {
    "icon": "icon",
    "icon_uri": "icon",
    "private": "private",
    "toread": "toread",
    "data-cover": "cover",
}


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[Item] = []
        self.folders: list[str | None] = []  # open folders, outermost first (None: a browser's root)
        self.heading: tuple[str, bool] | None = None  # an H3 read, waiting for its DL
        self.capture: list[str] | None = None  # text of the H3, A or H1 being read
        self.entry: Entry | None = None  # the last bookmark, whose DD may follow
        self.note: list[str] | None = None  # the DD being read
        self.quote: list[str] | None = None  # a blockquote inside the DD
        self.archived = False  # under Pocket's "Read Archive" heading
        self.count = 0
        self.held = 0  # characters of the text being read

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag in ("dt", "dl", "h3", "a", "h1"):
            self._close_anchor()
            self._end_entry()
        if tag == "h3":
            root = any(values.get(name, "").lower() == "true" for name in _BROWSER_ROOTS)
            root = root or (len(self.folders) <= 1 and values.get("add_date") == "0")  # Raindrop's Unsorted
            self.heading, self.capture, self.held = ("", root), [], 0
        elif tag == "dl":
            name, root = self.heading if self.heading is not None else (None, False)
            self.folders.append(None if root or name is None else name)
            self.heading = None
        elif tag == "a":
            self._start_bookmark(values)
        elif tag == "dd" and self.entry is not None:
            self._flush_note()  # Raindrop writes its note, then each highlight, in a DD of its own
            self.note, self.held = [], 0
        elif tag == "blockquote" and self.note is not None:
            self.quote, self.held = [], 0
        elif tag == "h1":
            self.capture, self.held = [], 0

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3" and self.heading is not None and self.capture is not None:
            self.heading = (" ".join("".join(self.capture).split()), self.heading[1])
            self.capture = None
        elif tag == "a":
            self._close_anchor()
        elif tag == "blockquote" and self.quote is not None and self.entry is not None:
            highlight = "".join(self.quote).strip()
            if highlight:
                self.entry.highlights.append(Highlight(highlight))
            self.quote = None
        elif tag == "h1" and self.capture is not None:
            self.archived = "".join(self.capture).strip().lower() == "read archive"
            self.capture = None
        elif tag == "dl":
            self._end_entry()
            if self.folders:
                self.folders.pop()

    def handle_data(self, data: str) -> None:
        target = (
            self.quote if self.quote is not None else self.note if self.note is not None else self.capture
        )
        if target is not None and self.held < TEXT_LIMIT:  # past it, the rest of the text is dropped
            target.append(data[: TEXT_LIMIT - self.held])
            self.held += len(data)

    def _start_bookmark(self, values: dict[str, str]) -> None:
        self.count += 1
        href = values.get("href", "").strip()
        entry = Entry(place=f"bookmark {self.count}", url=href or None)
        entry.created_at = seconds(values.get("add_date") or values.get("time_added"))
        entry.tags = [tag.strip() for tag in values.get("tags", "").split(",") if tag.strip()]
        entry.favorite = values.get("data-important", "").lower() == "true"
        entry.archived = self.archived
        entry.folder = [name for name in itertools.islice(self.folders, FOLDER_DEPTH + 1) if name][
            :FOLDER_DEPTH
        ]
        entry.unmapped = sorted(
            {label for name, label in _UNMAPPED.items() if values.get(name, "") not in ("", "0", "false")}
        )
        self.entry, self.capture, self.held = entry, [], 0

    def _close_anchor(self) -> None:
        """End the bookmark's title (at its </A>, or at the next tag that cannot be in it)."""
        if self.entry is None or self.capture is None or self.heading is not None:
            return
        self.entry.title = " ".join("".join(self.capture).split()) or None
        self.capture = None
        if self.entry.url is None:  # an anchor without HREF: nothing to keep
            self.entry = None

    def _flush_note(self) -> None:
        if self.entry is not None and self.note is not None:
            note = "".join(self.note).strip()
            if note:
                self.entry.notes.append(note)
        self.note = None

    def _end_entry(self) -> None:
        entry = self.entry
        if entry is None or self.capture is not None:  # none, or its anchor is still open
            return
        self._flush_note()
        self.found.append(entry)
        self.entry, self.note, self.quote = None, None, None

    def end_entry(self) -> None:
        """End the bookmark being read (the file ends, or will not be read further)."""
        self._close_anchor()
        self.capture = None
        self._end_entry()

    def finish(self) -> None:
        self.close()
        self.end_entry()


def read(chunks: Chunks) -> Iterator[Item]:
    """The bookmarks of a Netscape bookmark file (or Pocket's HTML export), in file order."""
    parser = _Parser()
    try:
        for text in decoded(chunks):
            parser.feed(text)
            yield from parser.found
            parser.found.clear()
            if len(parser.rawdata) > PENDING_LIMIT:  # (the parser's buffer of what it could not finish)
                parser.end_entry()
                yield from parser.found
                yield Broken(
                    f"after bookmark {parser.count}",
                    f"the file holds an unfinished tag or comment over {PENDING_LIMIT // 1024} KiB long; "
                    "the rest of the file was not read",
                )
                return
        if len(parser.rawdata) > CLOSE_LIMIT:
            parser.end_entry()
            yield from parser.found
            yield Broken(f"after bookmark {parser.count}", "the file ends inside a tag or comment")
            return
        parser.finish()
    except (AssertionError, ValueError) as exc:  # markup the standard library's parser gives up on
        parser.found.clear()
        yield Broken(
            f"after bookmark {parser.count}",
            f"the file cannot be read past here ({exc}); the rest was not read",
        )
        return
    yield from parser.found
