"""Fixtures of the formats' tests: export files as their exporters write them."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from cardvault.domain.portability.imports.formats import Broken, Chunks, Entry, Item, Reader

FIXTURES = Path(__file__).parents[5] / "fixtures" / "imports"


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


def zipped_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def members_of(root: Path, folder: str = "") -> dict[str, bytes]:
    """A fixture folder's files as ZIP members, in the exporter's order (its S3 listing: by name)."""
    return {
        folder + path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def broken(items: list[Item]) -> list[tuple[str, str]]:
    return [(item.place, item.reason) for item in items if isinstance(item, Broken)]


def taken(items: list[Item]) -> list[Entry]:
    return [item for item in items if isinstance(item, Entry)]


_MEASURED = """
import json, resource, sys
from cardvault.domain.portability.imports.formats import Broken, documents, streamed, zipped

def _size():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))

limit = _size() + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # past it, MemoryError: the parser held too much
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
{code}
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
described = [[type(i).__name__, i.place, getattr(i, "reason", None)] for i in items]
print(json.dumps({{"items": described, "grown": grown}}))
"""


def measured(code: str, address_space: int = 512 * 1024 * 1024) -> tuple[list[list[str | None]], int]:
    """What ``code`` (which sets ``items``, a reader's list of items) read, and how far the peak
    resident memory of the child process that ran it grew while it did: its address space is
    capped, so a parse that holds what it should not fails with MemoryError, not the machine."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED.format(code=textwrap.dedent(code)), str(address_space)],
        capture_output=True,
        text=True,
        check=False,
        cwd=FIXTURES.parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    return found["items"], found["grown"]
