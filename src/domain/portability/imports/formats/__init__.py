"""Other services' exports, read as streams of entries (cardvault.domain.portability.imports.jobs
turns each into a card). A reader takes the file's bytes a chunk at a time and yields an
``Entry`` per saved item, or a ``Broken`` for an item it cannot read, in the file's order; the
same file always yields the same sequence, so a job resumed after a crash skips what it took.

Each format's mapping is in docs/imports.md; what a format holds that no card keeps is
named in ``Entry.unmapped`` and counted in the job's report."""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Callable, Iterable, Iterator

Chunks = Iterable[bytes]  # a file's bytes, a chunk at a time


@dataclasses.dataclass
class Highlight:
    """A passage the user marked in the saved page, with the note they wrote on it: an
    annotation of the card (cardvault.domain.annotations)."""

    quote: str
    note: str | None = None
    color: str | None = None  # one of the annotations' palette


@dataclasses.dataclass
class Entry:
    """One saved item as its export describes it."""

    place: str  # where it is in the file, for the report ("line 12", "bookmark 40")
    url: str | None = None  # a saved page; None for a text note
    text: str | None = None  # a text note's text (no URL): a text card
    title: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)  # the user's notes, in order
    excerpt: str | None = None  # the page's description as the service kept it
    highlights: list[Highlight] = dataclasses.field(default_factory=list)
    tags: list[str] = dataclasses.field(default_factory=list)
    folder: list[str] = dataclasses.field(default_factory=list)  # its folder's path, outermost first
    created_at: int | None = None  # epoch milliseconds
    favorite: bool = False
    archived: bool = False
    unmapped: list[str] = dataclasses.field(default_factory=list)  # fields it had that no card keeps


@dataclasses.dataclass(frozen=True)
class Broken:
    """An item that cannot be read, and why."""

    place: str
    reason: str


Item = Entry | Broken
Opener = Callable[[], Chunks]  # the file's bytes from its start, each time it is called
Reader = Callable[[Opener], Iterator[Item]]  # a format's reader (it may read the file twice)


def single_pass(read: Callable[[Chunks], Iterator[Item]]) -> Reader:
    """A reader that reads the file once, from its bytes."""
    return lambda open_file: read(open_file())


def seconds(value: str | int | float | None) -> int | None:
    """Epoch milliseconds of a time in seconds (None for none, zero or nonsense); a value that
    can only be milliseconds or microseconds (some writers use them) is read as such."""
    try:
        number = float(value) if value not in (None, "") else 0.0
    except (TypeError, ValueError):
        return None
    if not number > 0 or number != number:  # zero, negative or NaN
        return None
    for scale in (1000.0, 1.0, 0.001):  # seconds, milliseconds, microseconds
        ms = number * scale
        if ms < 4_102_444_800_000:  # before 2100
            return int(ms)
    return None


SNIFF = 64 * 1024  # the bytes a text file's encoding is judged by
LINE_LIMIT = 1024 * 1024  # the longest line (or CSV record) a reader holds


def decoded(chunks: Chunks) -> Iterator[str]:
    """A text file's characters, a chunk at a time: UTF-16 or UTF-8 by its byte order mark,
    else UTF-8 when its first SNIFF bytes are UTF-8, else Windows-1252 (what spreadsheets on
    Windows save). Bytes that are no character of the encoding read as U+FFFD."""
    head, rest = b"", iter(chunks)
    for chunk in rest:
        head += chunk
        if len(head) >= SNIFF:
            break
    encoding = _encoding(head[:SNIFF])
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    yield decoder.decode(head)
    for chunk in rest:
        yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


def _encoding(head: bytes) -> str:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a character cut at the end of the sample
            return "cp1252"
    return "utf-8-sig"


def _split_lines(text: str) -> tuple[list[str], str]:
    """The whole lines of ``text`` with their endings (CRLF, LF or CR: the breaks CSV knows,
    not U+2028 and the like), and what follows the last one. Each break is found once: the next
    CR and LF positions are kept until passed, so a chunk costs one pass."""
    found, start, size = [], 0, len(text)
    next_lf, next_cr = text.find("\n"), text.find("\r")
    while start < size:
        if next_lf != -1 and next_lf < start:
            next_lf = text.find("\n", start)
        if next_cr != -1 and next_cr < start:
            next_cr = text.find("\r", start)
        if next_cr != -1 and (next_lf == -1 or next_cr < next_lf):
            if next_cr + 1 == size:
                break  # a CR that ends the text: its LF may start the next chunk
            end = next_cr + 2 if text[next_cr + 1] == "\n" else next_cr + 1
        elif next_lf != -1:
            end = next_lf + 1
        else:
            break
        found.append(text[start:end])
        start = end
    return found, text[start:]


def lines(chunks: Chunks) -> Iterator[str]:
    """A text file's lines with their endings (the last one perhaps without); a line over
    LINE_LIMIT characters raises LineTooLong."""
    carry = ""
    for text in decoded(chunks):
        if not text:
            continue
        found, carry = _split_lines(carry + text)
        yield from found
        if len(carry) > LINE_LIMIT:
            raise LineTooLong(f"a line of the file is over {LINE_LIMIT // 1024} KiB long")
    if carry:
        yield carry


class LineTooLong(Exception):
    """A text file holds a line too long to be any export's."""
