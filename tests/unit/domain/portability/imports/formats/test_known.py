"""A file's format told by its first bytes."""

from __future__ import annotations

import io
import zipfile

import pytest

from cardvault.domain.portability.imports.formats import known, zipped
from tests.unit.domain.portability.imports.formats.conftest import fixture


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("netscape_chrome.html", "netscape"),
        ("netscape_edge.html", "netscape"),
        ("netscape_firefox.html", "netscape"),
        ("netscape_pinboard.html", "netscape"),
        ("netscape_raindrop.html", "netscape"),
        ("netscape_safari.html", "netscape"),
        ("pocket.csv", "pocket"),
        ("pocket_2024_with_cursor.csv", "pocket"),
        ("pocket_legacy_ril_export.html", "pocket"),
        ("raindrop.csv", "raindrop"),
        ("instapaper.csv", "instapaper"),
        ("readwise.csv", "readwise"),
        ("karakeep.json", "karakeep"),
        ("linkwarden.json", "linkwarden"),
        ("wallabag.json", "wallabag"),
    ],
)
def test_each_fixture_is_told_by_its_first_bytes(name: str, expected: str) -> None:
    assert known.detect(fixture(name)[:4096]) == expected


@pytest.mark.parametrize(
    "head", [b"", b"\x00\x01", b"{}", b"[1, 2]", b"a,b,c\n1,2,3\n", b"<html></html>", b'"unclosed']
)
def test_bytes_of_no_format_tell_none(head: bytes) -> None:
    assert known.detect(head) is None


def test_pockets_old_html_export_is_read_as_bookmarks() -> None:
    head = fixture("pocket_legacy_ril_export.html")[:4096]
    assert known.reader("pocket", head) is known.FORMATS["netscape"]
    assert known.reader("pocket", fixture("pocket.csv")[:4096]) is known.FORMATS["pocket"]


def test_a_utf16_file_is_told_too() -> None:
    text = fixture("pocket.csv").decode()
    assert known.detect(text.encode("utf-16")[:4096]) == "pocket"


def _zip(*names: str, size: int = 100) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name in names:
            archive.writestr(name, b"x" * size)
    return out.getvalue()


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["annotations/part_000000.json", "collections/weekend.json", "part_000000.csv"], "pocket"),
        (["collections/weekend.json", "part_000000.csv"], "pocket"),
        (["part_000000.csv"], "pocket"),
        (["pocket/", "pocket/part_000000.csv"], "pocket"),  # zipped again from its folder
        (["metadata_0_to_20.json", "content/a-1.html"], "omnivore"),
        (["export/metadata_0_to_20.json"], "omnivore"),
        (["files/crd_7q2m4x8c3n5v9b1z6h0w2j4ra/beach.png", "cards.json"], "cardvault"),  # ours
        (["cards.json", "folders.json", "manifest.json"], "cardvault"),
        (["manifest.json"], None),
        (["notes.txt"], None),
    ],
)
def test_a_zip_is_told_by_the_names_of_its_first_members(names: list[str], expected: str | None) -> None:
    assert known.detect(_zip(*names)[:4096]) == expected


def test_a_pocket_zip_has_its_own_reader() -> None:
    assert known.reader("pocket", _zip("part_000000.csv")[:4096]) is zipped.pocket
    assert known.FORMATS["omnivore"] is zipped.omnivore
