"""Instapaper's CSV: its folders, starred and archived items, JSON tags, CRLF lines."""

from __future__ import annotations

from cardvault.domain.portability.imports.formats import delimited
from tests.unit.domain.portability.imports.formats.conftest import entries, fixture, read


def test_folders_stars_archive_selection_and_tags() -> None:
    found = entries(read(delimited.instapaper, fixture("instapaper.csv"), 5))
    assert [(e.folder, e.favorite, e.archived, e.tags) for e in found] == [
        ([], False, False, ["rust", "programming"]),
        ([], False, True, ["reise", "straßen"]),
        ([], True, False, []),
        (["Work Projects"], False, False, []),
        ([], False, False, ["日本語"]),
    ]
    assert found[0].excerpt == "Executors poll futures until they are ready."
    assert found[0].created_at == 1709302567000


def test_the_older_export_without_timestamps_and_tags() -> None:
    data = b"URL,Title,Selection,Folder\r\nhttps://example.com/a,A,,Unread\r\n"
    (entry,) = entries(read(delimited.instapaper, data))
    assert (entry.url, entry.title, entry.created_at, entry.tags) == ("https://example.com/a", "A", None, [])


def test_tags_that_are_no_json_array_are_none() -> None:
    data = b'URL,Title,Selection,Folder,Timestamp,Tags\r\nhttps://example.com/a,A,,Unread,1,"[oops"\r\n'
    (entry,) = entries(read(delimited.instapaper, data))
    assert entry.tags == []
