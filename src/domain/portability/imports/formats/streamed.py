"""JSON values read from an export as a stream, each built under a budget.

The text is parsed by ijson (yajl, in C) into events; the values at a path (``bookmarks.item``)
are built from them here, one at a time, and nothing else of the file is held. A value is
bounded as it is built: past VALUES_LIMIT values (keys, scalars and containers), DEPTH_LIMIT
levels of nesting, LIST_LIMIT items in one list or BYTES_LIMIT characters of its strings and
keys, what was built is dropped and the value becomes a TooBig (its entry fails alone) while
the parser reads on to its end. So an entry of ``"labels": [{}, {}, ...]`` costs the budget,
never the gigabytes its millions of objects would. A string over STRING_LIMIT bytes is never
built at all (`_Strings`), and bytes that are no text in the file's encoding mark their value
(`_Decoded`)."""

from __future__ import annotations

import codecs
import itertools
import operator
from collections.abc import Iterator
from typing import Any

import ijson

from cardvault.domain.portability.imports.formats import Chunks

STRING_LIMIT = 4 * 1024 * 1024  # bytes of one JSON string built; a longer one is never held whole
VALUES_LIMIT = 100_000  # values in one entry (each key, scalar, object and list counts one)
DEPTH_LIMIT = 32  # objects and lists one inside another in one entry
LIST_LIMIT = 20_000  # items of one list
BYTES_LIMIT = 8 * 1024 * 1024  # characters of one entry's strings and keys together
_SLICE = 64 * 1024  # bytes given the parser at a time: the events of one slice are held at once
_CUT = b'"\\u0000"'  # what a string over the limit becomes in the text the parser reads


class TooLong:
    """A value that held a string over STRING_LIMIT bytes: it was not built."""


class NotText:
    """A value that held bytes that are no text in the file's encoding (a stray Windows-1252
    byte in a UTF-8 export, say): it was not taken."""


class TooBig:
    """A value past its budget: what was built of it was dropped."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


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


def _sliced(chunks: Iterator[bytes]) -> Iterator[bytes]:
    for chunk in chunks:
        for start in range(0, len(chunk), _SLICE):
            yield chunk[start : start + _SLICE]


_STARTS = {"start_map": dict, "start_array": list}
_ENDS = frozenset(("end_map", "end_array"))
_DEPTH = dict.fromkeys(("map_key", "null", "boolean", "integer", "double", "number", "string"), 0)
_DEPTH |= dict.fromkeys(_STARTS, 1) | dict.fromkeys(_ENDS, -1)  # how each event changes the nesting
_EVENT = operator.itemgetter(0)


class _Builder:
    """The values at a path, built from the parser's events under the budget.

    Outside a value, the open containers down to the path's depth are kept as their path's
    parts (a deeper one is only counted); inside, the containers being built. Past the budget
    the built part is dropped and only the depth is counted until the value ends."""

    def __init__(self, prefix: str, passed: frozenset[str], decoded: _Decoded, strings: _Strings) -> None:
        self.wanted = prefix.split(".") if prefix else []
        self.passed = passed
        self._passing = False  # the value at one of the passed keys is being skipped
        self.decoded, self.strings = decoded, strings
        self.done: list[Any] = []  # the values ended so far, taken by the reader
        self._path: list[str | None] = []  # each open container's part of the path (a key, "item")
        self._deeper = 0  # containers open below the path's depth, outside a value
        self._built: list[Any] = []  # the containers of the value being built, outermost first
        self._keys: list[str | None] = []  # each built object's key waiting for its value
        self._skipped = 0  # containers still open of a value skipped (past its budget, or passed)
        self._over = ""
        self._finished_value: Any = None  # the value built, once its outermost container ends
        self._values = self._characters = 0
        self._long = self._marked = False

    def feed(self, events: list[tuple[str, Any]]) -> None:
        at, size = 0, len(events)
        while at < size:
            if self._skipped:
                at = self._skip(events, at)
                continue
            event, value = events[at]
            if self._built:
                self._build(event, value)
            else:
                self._outside(event, value)
            at += 1

    def _outside(self, event: str, value: Any) -> None:
        at_path = not self._deeper and self._path == self.wanted
        if at_path and event != "map_key" and event not in _ENDS:
            self._values = self._characters = 0
            self._long = self._marked = False
            self._build(event, value)
        elif event in _STARTS:
            if self._deeper or len(self._path) >= len(self.wanted):
                self._deeper += 1
            else:
                self._path.append("item" if event == "start_array" else None)
        elif event == "map_key":
            if not self._deeper and self._path:
                self._path[-1] = value
        elif event in _ENDS:
            if self._deeper:
                self._deeper -= 1
            elif self._path:
                self._path.pop()

    def _build(self, event: str, value: Any) -> None:
        if event == "map_key":
            self._keys[-1] = value
            self._count_text(value)
            self._passing = len(self._built) == 1 and value in self.passed
            self._check()
            return
        if self._passing:  # a passed key's value: never built, nor counted
            self._passing = False
            self._skipped = 1 if event in _STARTS else 0
            return
        if event in _ENDS:
            self._built.pop()
            self._keys.pop()
            if not self._built:
                self._end(self._finished_value)
            return
        made: Any = _STARTS[event]() if event in _STARTS else value
        if isinstance(made, str):
            self._count_text(made)
        self._values += 1
        self._attach(made)
        if event in _STARTS:
            self._built.append(made)
            self._keys.append(None)
            if len(self._built) > DEPTH_LIMIT:
                self._over = self._over or f"it nests over {DEPTH_LIMIT} levels deep"
        elif not self._built:
            self._end(made)
            return
        self._check()

    def _attach(self, made: Any) -> None:
        if not self._built:
            self._finished_value = made
            return
        parent = self._built[-1]
        if isinstance(parent, list):
            parent.append(made)
            if len(parent) > LIST_LIMIT:
                self._over = self._over or f"a list of it holds over {LIST_LIMIT:,} items"
        else:
            parent[self._keys[-1]] = made

    def _count_text(self, text: str) -> None:
        self._characters += len(text)
        self._values += 1
        if text == "\x00" and self.strings.cuts:
            self._long = True
        elif self.decoded.marks and _MARK in text:
            self._marked = True

    def _check(self) -> None:
        if not self._over and self._values > VALUES_LIMIT:
            self._over = f"it holds over {VALUES_LIMIT:,} values"
        if not self._over and self._characters > BYTES_LIMIT:
            self._over = f"its text is over {BYTES_LIMIT // 1024 // 1024} MiB"
        if self._over:  # drop what was built; count the containers left open until the value ends
            self._skipped = len(self._built)
            self._built.clear()
            self._keys.clear()
            self._finished_value = None

    def _skip(self, events: list[tuple[str, Any]], at: int) -> int:
        """Pass the events of a value past its budget: where the first after it is. The change of
        depth each event makes is summed in C (millions of ``{}`` cost about what parsing them
        does); only the slice in which the value ends is walked."""
        steps = list(
            itertools.accumulate(map(_DEPTH.__getitem__, map(_EVENT, itertools.islice(events, at, None))))
        )
        if not steps or min(steps) > -self._skipped:
            self._skipped += steps[-1] if steps else 0
            return len(events)
        ended = steps.index(-self._skipped)
        self._skipped = 0
        if self._over:
            self._end(None)
        return at + ended + 1

    def _end(self, value: Any) -> None:
        if self._over:
            self.done.append(TooBig(self._over))
        elif self._long:
            self.done.append(TooLong())
        elif self._marked:
            self.done.append(NotText())
        else:
            self.done.append(value)
        self._over, self._finished_value = "", None


def objects(chunks: Chunks, prefix: str, passed: frozenset[str] = frozenset()) -> Iterator[Any]:
    """The JSON values at ``prefix`` (ijson's path: ``bookmarks.item``), built one at a time
    without the members named in ``passed`` (a Linkwarden collection's links, when only its
    name is wanted): a value holding a string over STRING_LIMIT bytes as a TooLong, one holding bytes that are
    a value holding a string over STRING_LIMIT bytes as a TooLong, one holding bytes that are
    no text as a NotText, one past its budget as a TooBig. A file that is no JSON raises
    ijson.JSONError after every value before the fault (those ended in the slice it broke in
    too)."""
    events: list[tuple[str, Any]] = ijson.sendable_list()
    parser = ijson.basic_parse_coro(events, use_float=True)
    decoded, strings = _Decoded(), _Strings()
    builder = _Builder(prefix, passed, decoded, strings)
    try:
        for piece in _sliced(strings(decoded(chunks))):
            parser.send(piece)
            builder.feed(events)
            del events[:]
            yield from builder.done
            del builder.done[:]
        parser.close()
    except ijson.JSONError:
        builder.feed(events)
        yield from builder.done
        raise
    builder.feed(events)
    yield from builder.done
