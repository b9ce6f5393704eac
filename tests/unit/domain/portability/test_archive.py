"""The export archive's format: file names any file system takes, where each file goes, what a
card and a folder look like in it, and JSON documents that parse whole though written a piece at
a time."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cardvault.domain import folders
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.portability import archive

SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,119}")


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("report.pdf", "report.pdf"),
        ("Café menu (1).pdf", "Cafe-menu-1-.pdf"),
        ("ﬁnal ½.txt", "final-12.txt"),
        ("../../etc/passwd", "etc-passwd"),
        (".bashrc", "bashrc"),
        ("-rf", "rf"),
        ("a  //  b", "a-b"),
        ("日本語", "file"),
        ("", "file"),
        (None, "file"),
    ],
)
def test_a_name_becomes_one_any_file_system_takes(name: str | None, safe: str) -> None:
    assert archive.safe_name(name) == safe


def test_a_long_name_keeps_its_extension() -> None:
    cut = archive.safe_name("x" * 300 + ".pdf")
    assert cut == "x" * 116 + ".pdf" and len(cut) == archive.MAX_NAME
    assert archive.safe_name("x" * 300 + "." + "y" * 17) == "x" * 120  # no extension is that long
    assert archive.safe_name("x" * 300) == "x" * 120


@given(st.one_of(st.none(), st.text(max_size=400)))
def test_every_name_is_safe_and_short(name: str | None) -> None:
    safe = archive.safe_name(name)
    assert SAFE.fullmatch(safe) and "--" not in safe


def test_each_file_of_a_card_goes_in_a_folder_of_its_own() -> None:
    assert archive.file_path("file", "crd_1", "My photo.jpg") == "files/crd_1/My-photo.jpg"
    assert archive.file_path("captions", "crd_1", "talk.en.vtt") == "captions/crd_1/talk.en.vtt"
    assert archive.file_path("file", "crd_2", None) == "files/crd_2/file"
    assert archive.file_path("archive", "crd_3", "page.mhtml") == "archives/crd_3/page.mhtml"
    assert archive.file_path("screenshot", "crd_3", "screenshot.webp") == "screenshots/crd_3/screenshot.webp"
    assert archive.file_path("reader", "crd_3", "reader.md") == "readers/crd_3/reader.md"
    assert archive.ROLES == ("file", "captions", "screenshot", "archive", "reader")


def test_a_card_record_has_its_values_and_no_urls(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        folder = folders.create_folder(session, account_id=account_id, name="Reading", color="blue")
        card = editing.add_card(
            session, account_id=account_id, content="https://example.com/a", notes="n", tags=["web"]
        ).card
        folders.add_cards(session, account_id=account_id, folder_id=folder.id, card_ids=[card.id])
        record, shown = archive.card_record(card), archive.folder_record(folder)
    assert {key: record[key] for key in ("id", "type", "content", "notes", "url", "tags", "folderIds")} == {
        "id": card.id,
        "type": "link",
        "content": "https://example.com/a",
        "notes": "n",
        "url": "https://example.com/a",
        "tags": ["web"],
        "folderIds": [folder.id],
    }
    assert (record["file"], record["captions"], record["deletedAt"], record["linkFacts"]) == (
        None,
        None,
        None,
        [],
    )
    signed = {"fileUrl", "compactUrl", "placeholderUrl", "thumbnailUrl", "linkPreviewImageUrl", "appUrl"}
    assert not signed & set(record)  # the API's links expire; the page's own addresses are kept
    assert shown == {
        "id": folder.id,
        "name": "Reading",
        "color": "blue",
        "kind": "manual",
        "createdAt": folder.created_at,
        "updatedAt": folder.updated_at,
    }
    json.dumps(record)  # nothing that JSON cannot hold


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_document_parses_whole(count: int) -> None:
    records = [{"id": f"crd_{n}", "content": 'é\n"q"'} for n in range(count)]
    written = b"".join(archive.json_document("cards", records))
    assert json.loads(written) == {"formatVersion": archive.FORMAT_VERSION, "cards": records}


def test_a_document_takes_its_records_one_at_a_time() -> None:
    taken: list[int] = []

    def records() -> Iterator[dict[str, Any]]:
        for n in itertools.count():
            taken.append(n)
            yield {"n": n}

    pieces = archive.json_document("cards", records())
    next(pieces), next(pieces), next(pieces)
    assert taken == [0, 1]


def test_the_manifest_lists_counts_files_and_what_was_left_out() -> None:
    files = [{"path": "files/crd_1/a.pdf", "size": 3, "sha256": "ab"}]
    omitted = [{"cardId": "crd_2", "reason": "missing"}]
    written = b"".join(
        archive.manifest(export_id="exp_1", created_at=5, counts={"cards": 2}, files=files, omitted=omitted)
    )
    assert json.loads(written) == {
        "formatVersion": 1,
        "exportId": "exp_1",
        "createdAt": 5,
        "counts": {"cards": 2},
        "files": files,
        "omitted": omitted,
    }
    empty = b"".join(archive.manifest(export_id="exp_1", created_at=5, counts={}, files=[], omitted=[]))
    assert json.loads(empty)["files"] == [] == json.loads(empty)["omitted"]
