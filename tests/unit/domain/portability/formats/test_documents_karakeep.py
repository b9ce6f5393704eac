"""Karakeep's JSON export: links and text notes, manual lists (nested) as folders, read twice."""

from __future__ import annotations

from cardvault.domain.portability.formats import documents
from tests.unit.domain.portability.formats.conftest import entries, fixture, read_opened


def test_links_notes_lists_and_times() -> None:
    found = entries(read_opened(documents.karakeep, fixture("karakeep.json"), 29))
    rust, roads, docs, quote = found
    assert (rust.url, rust.tags, rust.folder, rust.created_at) == (
        "https://example.com/articles/async-rust?ref=feed&utm_source=newsletter",
        ["rust", "programming"],
        ["Reading"],
        1709302567000,
    )
    assert rust.notes == ["Read before the team workshop.\nSecond line."]
    assert roads.archived and roads.folder == [] and roads.notes == []
    assert docs.title is None and docs.folder == ["Reading", "Work / Projects"]  # its list's parent first
    assert (quote.url, quote.text, quote.title) == (
        None,
        'He said "hello", then left — 東京, 2024.',
        "Quote of the day",
    )


def test_lists_after_bookmarks_a_smart_list_and_a_cycle_of_parents() -> None:
    data = (
        b'{"bookmarks":[{"createdAt":1,"content":{"type":"link","url":"https://example.com/a"},'
        b'"lists":["a","s","b"]}],"lists":[{"id":"a","name":"A","parentId":"b","type":"manual"},'
        b'{"id":"b","name":"B","parentId":"a","type":"manual"},{"id":"s","name":"S","type":"smart"}]}'
    )
    (entry,) = entries(read_opened(documents.karakeep, data, 7))
    assert entry.folder == ["B", "A"] and entry.unmapped == ["lists (beyond the first)"]
