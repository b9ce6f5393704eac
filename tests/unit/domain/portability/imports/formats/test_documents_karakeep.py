"""Karakeep's JSON export: links and text notes, manual lists (nested) as folders, read twice;
a bookmark or list with a wrong-typed field, or past its budget, fails alone, and the lists are
bounded."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import documents
from tests.unit.domain.portability.imports.formats.conftest import (
    broken,
    entries,
    fixture,
    read_opened,
    taken,
)


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


IN_ONE = '"lists": [1]'


def _bookmark(fields: str) -> str:
    return (
        '{"content": {"type": "link", "url": "https://example.com/x"}'
        + (f", {fields}" if fields else "")
        + "}"
    )


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ('"lists": 5', "its lists is no list: not taken"),
        ('"lists": "a"', "its lists is no list: not taken"),
        ('"lists": [["a"]]', "its lists is no id: not taken"),
        ('"lists": [{"id": "a"}]', "its lists is no id: not taken"),
        (
            '"tags": [' + ",".join(['"t"'] * 20_001) + "]",
            "a list of it holds over 20,000 items, more than any export's entry: not taken",
        ),
    ],
)
def test_a_wrong_typed_or_oversized_bookmark_fails_alone(fields: str, reason: str) -> None:
    data = f'{{"bookmarks": [{_bookmark("")}, {_bookmark(fields)}, {_bookmark(IN_ONE)}],'
    data += '"lists": [{"id": 1, "name": "One"}]}'
    items = read_opened(documents.karakeep, data.encode())
    assert broken(items) == [("bookmark 2", reason)]
    assert [entry.folder for entry in taken(items)] == [[], ["One"]]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ('"id": ["a"]', "its id is no id: not taken"),
        ('"id": "a", "parentId": {"id": "b"}', "its parentId is no id: not taken"),
    ],
)
def test_a_list_with_a_wrong_typed_id_fails_alone(fields: str, reason: str) -> None:
    data = f'{{"lists": [{{"name": "Bad", {fields}}}, {{"id": "b", "name": "B"}}],'
    data += '"bookmarks": [{"content": {"type": "link", "url": "https://example.com/x"}, "lists": ["b"]}]}'
    items = read_opened(documents.karakeep, data.encode())
    assert broken(items) == [("list 1", reason)] and taken(items)[0].folder == ["B"]


def test_lists_past_the_bound_are_not_kept_and_their_bookmarks_are_taken_without_them() -> None:
    lists = ",".join(f'{{"id": {n}, "name": "L{n}"}}' for n in range(documents.FOLDERS_LIMIT + 5))
    data = f'{{"lists": [{lists}], "bookmarks": [{_bookmark(IN_ONE)},'
    data += f"{_bookmark(chr(34) + 'lists' + chr(34) + f': [{documents.FOLDERS_LIMIT + 2}]')}]}}"
    items = read_opened(documents.karakeep, data.encode())
    assert [place for place, _ in broken(items)] == [f"list {documents.FOLDERS_LIMIT + 1}"]
    assert "over 10,000 or their names over 1 MiB" in broken(items)[0][1]
    assert [entry.folder for entry in taken(items)] == [["L1"], []]


def test_list_names_past_their_bound_are_not_kept() -> None:
    name = "n" * (300 * 1024)
    lists = ",".join(f'{{"id": {n}, "name": "{name}"}}' for n in range(5))
    data = f'{{"lists": [{lists}], "bookmarks": [{_bookmark(chr(34) + "lists" + chr(34) + ": [3]")}]}}'
    items = read_opened(documents.karakeep, data.encode())
    assert [place for place, _ in broken(items)] == ["list 4"] and taken(items)[0].folder == []
