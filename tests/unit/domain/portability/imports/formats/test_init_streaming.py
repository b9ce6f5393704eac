"""Each text format is read as a stream: a 16 MiB export, made as it is read, is read whole
while the reader holds a small part of it (the 30,000-entry import's memory is measured by
bench/bench_imports.py)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from cardvault.domain.portability.imports.formats import Chunks, Entry, Item, delimited, documents, netscape

TITLE = b"t" * 2000
BLOCKS, PER_BLOCK = 32, 256  # 8,192 entries of about 2 KiB: 16 MiB


def _blocks(entry: bytes, between: bytes = b"") -> Iterator[bytes]:
    """The entries, a block at a time: ``entry`` % (its number, TITLE)."""
    for block in range(BLOCKS):
        numbers = range(block * PER_BLOCK, (block + 1) * PER_BLOCK)
        yield (b"" if block == 0 else between) + between.join(entry % (n, TITLE) for n in numbers)


def _pocket() -> Iterator[bytes]:
    yield b"url,title,time_added,tags,status\n"
    yield from _blocks(b"https://example.com/%d,%s,1700000000,a|b,unread\n")


def _netscape() -> Iterator[bytes]:
    yield b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n<DT><H3>Folder</H3>\n<DL><p>\n"
    yield from _blocks(b'<DT><A HREF="https://example.com/%d" ADD_DATE="1700000000">%s</A>\n')
    yield b"</DL><p>\n</DL><p>\n"


def _wallabag() -> Iterator[bytes]:
    yield b"["
    yield from _blocks(b'{"url": "https://example.com/%d", "title": "%s", "is_archived": 0}', b",")
    yield b"]"


def _one_pass(reader: Callable[[Chunks], Iterator[Item]]) -> Callable[[Callable[[], Chunks]], Iterator[Item]]:
    return lambda open_file: reader(open_file())


@pytest.mark.parametrize(
    ("reader", "file"),
    [
        (_one_pass(delimited.pocket), _pocket),
        (_one_pass(netscape.read), _netscape),
        (documents.wallabag, _wallabag),
    ],
    ids=["csv", "netscape", "json"],
)
def test_a_16_mib_export_is_read_whole_holding_a_small_part_of_it(
    reader: Callable[[Callable[[], Chunks]], Iterator[Item]], file: Callable[[], Iterator[bytes]]
) -> None:
    size = sum(len(chunk) for chunk in file())
    assert size > 16_000_000
    count, last = 0, None
    tracemalloc.start()
    try:
        for item in reader(file):
            count, last = count + 1, item
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == BLOCKS * PER_BLOCK
    assert isinstance(last, Entry) and last.url == f"https://example.com/{count - 1}"
    assert peak < size // 4, peak  # the file's chunk, an entry and the parser's own: not the file
