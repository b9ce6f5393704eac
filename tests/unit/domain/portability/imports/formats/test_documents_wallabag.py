"""wallabag's JSON export: stars, archive, tags, annotations as highlights, escaped text; an
entry past its budget or with a wrong-typed field fails alone."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import Highlight, documents
from tests.unit.domain.portability.imports.formats.conftest import (
    broken,
    entries,
    fixture,
    measured,
    read_opened,
)


def test_flags_tags_annotations_and_what_is_not_kept() -> None:
    found = entries(read_opened(documents.wallabag, fixture("wallabag.json"), 33))
    rust, roads, quoting, books = found
    assert (rust.favorite, rust.archived, rust.created_at) == (True, False, 1709302567000)  # +01:00
    assert rust.highlights == [Highlight("Executors poll futures until they are ready.", "Key idea")]
    assert rust.unmapped == ["content", "preview_picture"]
    assert roads.title == "Über Straßen & Brücken — ein Überblick" and roads.archived  # from \\u escapes
    assert quoting.tags == [] and books.tags == ["日本語", "books"] and books.favorite and books.archived


def test_an_entry_holding_millions_of_objects_fails_alone_in_bounded_memory() -> None:
    # 32 MiB of "{}," in one entry's tags: built whole it took about 2 GB; past its budget the
    # entry fails alone and the parser reads on.
    items, grown = measured(
        """
        def file():
            yield b'[{"url": "https://example.com/a"}, {"url": "https://example.com/b", "tags": ['
            for _ in range(32):
                yield b"{}," * (1024 * 1024 // 3)
            yield b'{}]}, {"url": "https://example.com/c"}]'

        items = list(documents.wallabag(file))
        """
    )
    assert items == [
        ["Entry", "entry 1", None],
        [
            "Broken",
            "entry 2",
            "a list of it holds over 20,000 items, more than any export's entry: not taken",
        ],
        ["Entry", "entry 3", None],
    ]
    assert grown < 48 * 1024 * 1024  # the budget's 20,000 objects and a slice's events, not 11 million


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("annotations", "7", "its annotations is no list: not taken"),
        ("annotations", '{"quote": "q"}', "its annotations is no list: not taken"),
        ("annotations", '"text"', "its annotations is no list: not taken"),
    ],
)
def test_a_wrong_typed_field_fails_its_entry_alone(field: str, value: str, reason: str) -> None:
    data = f'[{{"url": "https://example.com/a"}}, {{"url": "https://example.com/b", "{field}": {value}}},'
    data += '{"url": "https://example.com/c"}]'
    assert broken(read_opened(documents.wallabag, data.encode())) == [("entry 2", reason)]


@pytest.mark.parametrize(
    "fields",
    ['"tags": 5', '"tags": [1, {"a": 1}, "kept"]', '"created_at": [1]', '"is_starred": {}', '"url": 3'],
)
def test_a_wrong_typed_value_of_a_lenient_field_is_left_out(fields: str) -> None:
    data = f'[{{"url": "https://example.com/a", {fields}}}]'
    (entry,) = entries(read_opened(documents.wallabag, data.encode()))
    assert entry.tags in ([], ["kept"]) and not entry.favorite and entry.created_at is None
