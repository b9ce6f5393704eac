"""The ZIP readers' defences (cardvault.domain.portability.imports.formats.zipped): path tricks, zip
bombs, every member's bytes counted, a directory too big, encrypted, unknown, corrupt and
misplaced members, a file that is no ZIP. (Each format's mapping: test_zipped_pocket.py and
test_zipped_omnivore.py.)"""

from __future__ import annotations

import io
import zipfile

import pytest

from cardvault.domain.portability.imports.formats import zipped
from tests.unit.domain.portability.imports.formats.conftest import broken, read_opened, taken, zipped_bytes

ROW = b"title,url,time_added,tags,status\nOne,https://one.example/,1700000000,,unread\n"


def test_a_member_named_as_a_path_trick_fails_alone_and_is_never_read() -> None:
    members = {
        "../part_000001.csv": ROW,
        "/etc/part_000002.csv": ROW,
        "pocket\\part_000003.csv": ROW,
        "a/./part_000004.csv": ROW,
        "part_000000.csv": ROW,
    }
    items = read_opened(zipped.pocket, zipped_bytes(members))
    assert [e.place for e in taken(items)] == ["part_000000.csv, line 2"]
    assert sorted(place for place, _ in broken(items)) == sorted(
        f"member {name!r}" for name in members if name != "part_000000.csv"
    )
    assert all("not a plain path" in reason for _, reason in broken(items))


def test_a_zip_bomb_member_ends_at_the_limit_with_the_entries_before_it_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zipped, "MEMBER_LIMIT", 300 * 1024)
    rows = b"".join(b"T%d,https://t%d.example/,1700000000,,unread\n" % (i, i) for i in range(40_000))
    bomb = zipped_bytes(
        {"part_000000.csv": b"title,url,time_added,tags,status\n" + rows, "part_000001.csv": ROW}
    )
    assert len(bomb) < len(rows) // 4  # it compresses well
    items = read_opened(zipped.pocket, bomb)
    found = taken(items)
    assert 5_000 < len(found) < 40_000 and found[-1].title == "One"  # the next member is read
    assert broken(items) == [("part_000000.csv", "it holds over 307,200 bytes: not read past there")]


def test_every_members_bytes_count_against_the_files_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zipped, "TOTAL_LIMIT", len(ROW) * 2 + 10)
    items = read_opened(zipped.pocket, zipped_bytes({f"part_00000{i}.csv": ROW for i in range(4)}))
    assert len(taken(items)) == 2
    assert broken(items) == [
        ("the file", f"its members hold over {len(ROW) * 2 + 10:,} bytes: nothing past there is read")
    ]


@pytest.mark.parametrize(("limit", "setting"), [("MEMBER_COUNT_LIMIT", 3), ("DIRECTORY_LIMIT", 100)])
def test_a_directory_past_its_bounds_is_refused_before_zipfile_reads_it(
    limit: str, setting: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zipped, limit, setting)
    items = read_opened(zipped.pocket, zipped_bytes({f"part_00000{i}.csv": ROW for i in range(4)}))
    ((place, reason),) = broken(items)
    assert place == "the file" and "members" in reason and taken(items) == []


def _damaged(offset_in_central: int, value: bytes, offset_in_local: int | None = None) -> bytes:
    """An archive of a good member, then part_000000.csv with bytes of its central header (and
    of its local header) replaced."""
    data = bytearray(
        zipped_bytes(
            {
                "part_000001.csv": ROW.replace(b"One,https://one", b"Two,https://two"),
                "part_000000.csv": ROW,
            },
            zipfile.ZIP_STORED,
        )
    )
    central = data.rfind(b"PK\x01\x02")  # the last member's
    data[central + offset_in_central : central + offset_in_central + len(value)] = value
    if offset_in_local is not None:
        local = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("part_000000.csv").header_offset
        data[local + offset_in_local : local + offset_in_local + len(value)] = value
    return bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_damaged(8, b"\x01\x00", 6), id="encrypted"),  # its flag says so
        pytest.param(_damaged(10, b"\x63\x00", 8), id="an unknown compression"),  # AES (99)
        pytest.param(_damaged(16, b"\x00\x00\x00\x00"), id="a bad CRC"),
        pytest.param(_damaged(42, (5).to_bytes(4, "little")), id="a wrong header offset"),
    ],
)
def test_a_member_zipfile_cannot_read_fails_alone(data: bytes) -> None:
    items = read_opened(zipped.pocket, data)
    ((place, reason),) = broken(items)
    assert place == "part_000000.csv" and reason.startswith("it cannot be read from the archive")
    assert [e.title for e in taken(items)] == ["Two"]


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04 cut", b"not a zip at all" * 100])
def test_a_file_that_is_no_zip_is_one_failure(data: bytes) -> None:
    items = read_opened(zipped.omnivore, data)
    ((place, reason),) = broken(items)
    assert place == "the file" and "no ZIP" in reason
