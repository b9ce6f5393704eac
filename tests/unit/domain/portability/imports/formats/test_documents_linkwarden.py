"""Linkwarden's JSON backup: collections (nested) as folders, tags by name, pins as favorites; a
link or collection with a wrong-typed field, or past its budget, fails alone."""

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


def test_collections_descriptions_tags_and_pins() -> None:
    found = entries(read_opened(documents.linkwarden, fixture("linkwarden.json"), 101))
    quoting, rust, docs, roads = found
    assert quoting.folder == []  # Linkwarden's own Unorganized
    assert (rust.folder, rust.tags, rust.favorite) == (["Work"], ["rust", "programming"], True)
    assert rust.notes == ["Read before the team workshop."] and rust.excerpt == "How executors poll futures."
    assert rust.created_at == 1709302567482
    assert docs.folder == ["Work", "Projects"] and not docs.favorite
    assert roads.tags == ["reise"] and roads.place == "link 4"


def _backup(link: str, collection: str = '"id": 1, "name": "One"') -> bytes:
    links = (
        f'{{"url": "https://example.com/a", "collectionId": 1}}, {link}, {{"url": "https://example.com/c"}}'
    )
    return f'{{"collections": [{{{collection}, "links": [{links}]}}], "pinnedLinks": []}}'.encode()


@pytest.mark.parametrize(
    ("link", "reason"),
    [
        ('{"url": "https://example.com/b", "collectionId": [1]}', "its collectionId is no id: not taken"),
        (
            '{"url": "https://example.com/b", "collectionId": {"id": 1}}',
            "its collectionId is no id: not taken",
        ),
        ('{"url": "https://example.com/b", "tags": 5}', "its tags is no list: not taken"),
        ('{"url": "https://example.com/b", "tags": {"name": "x"}}', "its tags is no list: not taken"),
        (
            '{"url": "https://example.com/b", "tags": [' + ",".join(['{"name": "t"}'] * 20_001) + "]}",
            "a list of it holds over 20,000 items, more than any export's entry: not taken",
        ),
    ],
)
def test_a_wrong_typed_or_oversized_link_fails_alone(link: str, reason: str) -> None:
    items = read_opened(documents.linkwarden, _backup(link))
    assert broken(items) == [("link 2", reason)]
    assert [(entry.url, entry.folder) for entry in taken(items)] == [
        ("https://example.com/a", ["One"]),
        ("https://example.com/c", []),
    ]


def test_a_collection_with_a_wrong_typed_id_fails_alone_and_its_links_are_read() -> None:
    items = read_opened(
        documents.linkwarden, _backup('{"url": "https://example.com/b"}', '"id": [1], "name": "One"')
    )
    assert broken(items) == [("collection 1", "its id is no id: not taken")] and len(taken(items)) == 3


def test_pinned_links_that_are_no_objects_or_urls_are_passed_over() -> None:
    data = b'{"collections": [{"id": 1, "name": "One", "links": [{"url": "https://example.com/a"}]}],'
    data += b'"pinnedLinks": [5, {"url": ["x"]}, {"url": "https://example.com/a"}]}'
    (entry,) = entries(read_opened(documents.linkwarden, data))
    assert entry.favorite
