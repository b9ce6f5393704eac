"""ZIP exports (cardvault.domain.portability.formats.zipped): Pocket's 2025 ZIP and Omnivore's,
built from their members as the exporters write them; members in one folder, read in the order
of their numbers; and the archive's defences: path tricks, zip bombs, a directory too big,
encrypted, unknown, corrupt and cut members, a file that is no ZIP."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from cardvault.domain.portability.formats import Broken, Entry, Item, zipped
from tests.unit.domain.portability.formats.conftest import FIXTURES, read_opened

POCKET = FIXTURES / "pocket2025"
OMNIVORE = FIXTURES / "omnivore"


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _members(root: Path, folder: str = "") -> dict[str, bytes]:
    """The fixture's members, in the exporter's order (its S3 listing: by name)."""
    return {
        folder + path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _broken(items: list[Item]) -> list[tuple[str, str]]:
    return [(item.place, item.reason) for item in items if isinstance(item, Broken)]


def _entries(items: list[Item]) -> list[Entry]:
    return [item for item in items if isinstance(item, Entry)]


@pytest.mark.parametrize("folder", ["", "pocket/"])
def test_pocket_rows_take_their_highlights_by_url_and_the_lists_are_counted(folder: str) -> None:
    items = read_opened(zipped.pocket, _zip(_members(POCKET, folder)), 1000)
    found = _entries(items)
    assert _broken(items) == []
    assert [(e.place, e.title, e.tags, e.archived) for e in found] == [
        (f"{folder}part_000000.csv, line 2", "How to Do Great Work", ["essays", "career"], False),
        (
            f"{folder}part_000000.csv, line 3",
            'Falsehoods programmers believe about time, and "time zones"',
            [],
            True,
        ),
        (
            f"{folder}part_000000.csv, line 4",
            "The Log: What every software engineer should know about real-time data's unifying abstraction",
            ["programming", "distributed systems"],
            True,
        ),
        (
            f"{folder}part_000000.csv, line 5",
            "Über die Kunst, langsam zu lesen – 日本語の読書術",
            ["lesen", "日本語"],
            False,
        ),
        (f"{folder}part_000000.csv, line 6", None, [], False),  # Pocket wrote the URL as its title
    ]
    assert found[0].highlights == [
        "The way to figure out what to work on is by working.",
        "Curiosity is the best guide. Your curiosity never lies, and it knows more than you do "
        "about what's worth paying attention to.",
    ]
    assert found[3].highlights == [
        "Wer langsam liest, liest zweimal – „das Buch öffnet sich erst beim zweiten Blick“."
    ]
    assert [e.highlights for e in found[1:3] + found[4:]] == [[], [], []]
    assert found[0].created_at == 1689002113000
    assert [e.unmapped for e in found] == [["collections"], [], [], [], []]  # one shareable list


def test_pocket_parts_are_read_by_their_numbers_and_stray_highlights_are_reported() -> None:
    header = b"title,url,time_added,tags,status\n"
    members = {
        "part_000010.csv": header + b"Ten,https://ten.example/,1700000000,,unread\n",
        "part_000002.csv": header + b"Two,https://two.example/,1700000000,,unread\n",
        "annotations/part_000000.json": b'[{"url":"https://gone.example/","title":"x","highlights":[{"quote":"q","created_at":1}]}]',
    }
    items = read_opened(zipped.pocket, _zip(members))
    assert [e.title for e in _entries(items)] == ["Two", "Ten"]
    assert _broken(items) == [
        ("annotations", "the highlights of 1 pages name a URL no saved item has: not kept")
    ]


def test_omnivore_items_take_labels_state_times_and_their_highlights_and_notes() -> None:
    items = read_opened(zipped.omnivore, _zip(_members(OMNIVORE)), 777)
    found = _entries(items)
    assert _broken(items) == []
    assert [(e.title, e.tags, e.archived, e.created_at) for e in found] == [
        (
            "Why Building in AI Is Nothing Like Making Conventional Software",
            ["Newsletter", "ai"],
            False,
            1730217478808,
        ),
        (
            "Malgré la crise du marché des montres, Breitling étend son réseau commercial",
            ["RSS"],
            True,
            1730208769000,
        ),
        ("東京の古本屋めぐり：神保町ガイド", [], False, 1730016903114),
        ("Do You Really Want to Live Forever? – Centauri Dreams", [], False, 1729850877000),
    ]
    first, second, third, fourth = found
    assert first.excerpt == "Introducing Source Code, your backstage pass to Every Studio"
    assert first.highlights == [
        "In traditional software, you write the rules.\n\nIn AI products, you shape the behavior."
        "\n\nGood framing for the team offsite.",  # a quote of two paragraphs, then its note
        "Prototyping is cheap; evaluation is expensive.",
    ]
    assert second.highlights == [
        "La marque suisse veut s’étendre ailleurs en Asie.\n\nVoir aussi l’article sur Swatch — à relire."
    ]
    assert (third.highlights, third.notes) == ([], [])
    assert (fourth.highlights, fourth.notes) == (
        [],
        ["Article-level note: compare with Bostrom's fable of the dragon-tyrant."],
    )
    assert first.unmapped == ["author", "thumbnail", "readingProgress", "content", "highlight labels"]
    assert third.unmapped == ["content"]


def test_omnivore_metadata_files_are_read_in_the_order_of_their_numbers() -> None:
    def batch(title: str) -> bytes:
        return (
            f'[{{"slug": "s", "title": "{title}", "url": "https://{title}.example/", "labels": []}}]'.encode()
        )

    members = {"metadata_100_to_101.json": batch("third"), "metadata_0_to_20.json": batch("first")}
    members["metadata_20_to_40.json"] = batch("second")
    assert [e.title for e in _entries(read_opened(zipped.omnivore, _zip(members)))] == [
        "first",
        "second",
        "third",
    ]


ROW = b"title,url,time_added,tags,status\nOne,https://one.example/,1700000000,,unread\n"


def test_a_member_named_as_a_path_trick_fails_alone_and_is_never_read() -> None:
    members = {
        "../part_000001.csv": ROW,
        "/etc/part_000002.csv": ROW,
        "pocket\\part_000003.csv": ROW,
        "a/./part_000004.csv": ROW,
        "part_000000.csv": ROW,
    }
    items = read_opened(zipped.pocket, _zip(members))
    assert [e.place for e in _entries(items)] == ["part_000000.csv, line 2"]
    assert sorted(place for place, _ in _broken(items)) == sorted(
        f"member {name!r}" for name in members if name != "part_000000.csv"
    )
    assert all("not a plain path" in reason for _, reason in _broken(items))


def test_a_zip_bomb_member_ends_at_the_limit_with_the_entries_before_it_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zipped, "MEMBER_LIMIT", 300 * 1024)
    rows = b"".join(b"T%d,https://t%d.example/,1700000000,,unread\n" % (i, i) for i in range(40_000))
    bomb = _zip({"part_000000.csv": b"title,url,time_added,tags,status\n" + rows, "part_000001.csv": ROW})
    assert len(bomb) < len(rows) // 4  # it compresses well
    items = read_opened(zipped.pocket, bomb)
    found = _entries(items)
    assert 5_000 < len(found) < 40_000 and found[-1].title == "One"  # the next member is read
    assert _broken(items) == [("part_000000.csv", "it holds over 307,200 bytes: not read past there")]


def test_every_members_bytes_count_against_the_files_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zipped, "TOTAL_LIMIT", len(ROW) * 2 + 10)
    items = read_opened(zipped.pocket, _zip({f"part_00000{i}.csv": ROW for i in range(4)}))
    assert len(_entries(items)) == 2
    assert _broken(items) == [
        ("the file", f"its members hold over {len(ROW) * 2 + 10:,} bytes: nothing past there is read")
    ]


@pytest.mark.parametrize(("limit", "setting"), [("MEMBER_COUNT_LIMIT", 3), ("DIRECTORY_LIMIT", 100)])
def test_a_directory_past_its_bounds_is_refused_before_zipfile_reads_it(
    limit: str, setting: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zipped, limit, setting)
    items = read_opened(zipped.pocket, _zip({f"part_00000{i}.csv": ROW for i in range(4)}))
    ((place, reason),) = _broken(items)
    assert place == "the file" and "members" in reason and _entries(items) == []


def _damaged(offset_in_central: int, value: bytes, offset_in_local: int | None = None) -> bytes:
    """An archive of a good member, then part_000000.csv with bytes of its central header (and
    of its local header) replaced."""
    data = bytearray(
        _zip(
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
    ((place, reason),) = _broken(items)
    assert place == "part_000000.csv" and reason.startswith("it cannot be read from the archive")
    assert [e.title for e in _entries(items)] == ["Two"]


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04 cut", b"not a zip at all" * 100])
def test_a_file_that_is_no_zip_is_one_failure(data: bytes) -> None:
    items = read_opened(zipped.omnivore, data)
    ((place, reason),) = _broken(items)
    assert place == "the file" and "no ZIP" in reason
