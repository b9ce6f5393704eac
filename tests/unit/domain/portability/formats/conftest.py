"""Fixtures of the formats' tests: export files as their exporters write them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cardvault.domain.portability.formats import Entry, Item, Reader

FIXTURES = Path(__file__).parents[4] / "fixtures" / "imports"


def read(reader: Reader, data: bytes, chunk: int = 64 * 1024) -> list[Item]:
    """What the reader makes of these bytes, given a chunk at a time."""

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(data), chunk):
            yield data[start : start + chunk]

    return list(reader(chunks()))


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def entries(items: list[Item]) -> list[Entry]:
    assert all(isinstance(item, Entry) for item in items), items
    return [item for item in items if isinstance(item, Entry)]
