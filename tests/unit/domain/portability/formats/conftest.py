"""Fixtures of the formats' tests: export files as their exporters write them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from cardvault.domain.portability.formats import Chunks, Entry, Item, Reader

FIXTURES = Path(__file__).parents[4] / "fixtures" / "imports"


def _chunks(data: bytes, chunk: int) -> Iterator[bytes]:
    for start in range(0, len(data), chunk):
        yield data[start : start + chunk]


def read(reader: Callable[[Chunks], Iterator[Item]], data: bytes, chunk: int = 64 * 1024) -> list[Item]:
    """What a reader of one pass makes of these bytes, given a chunk at a time."""
    return list(reader(_chunks(data, chunk)))


def read_opened(reader: Reader, data: bytes, chunk: int = 64 * 1024) -> list[Item]:
    """What a format's reader (which may open the file more than once) makes of these bytes."""
    return list(reader(lambda: _chunks(data, chunk)))


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def entries(items: list[Item]) -> list[Entry]:
    assert all(isinstance(item, Entry) for item in items), items
    return [item for item in items if isinstance(item, Entry)]
