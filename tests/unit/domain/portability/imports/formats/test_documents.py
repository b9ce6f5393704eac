"""What the JSON readers share: a file that stops being JSON, values that are no objects,
nesting far deeper than any export's, strings too long to build (a 200 MB one fails its
entry alone, in bounded memory), and files in another encoding than UTF-8 or with bytes
that are no text."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest

from cardvault.domain.portability.imports.formats import Broken, Entry, documents
from tests.unit.domain.portability.imports.formats.conftest import entries, read_opened


def test_a_file_that_breaks_off_keeps_what_came_before_and_says_where() -> None:
    data = b'[{"url":"https://example.com/a"},{"url":"https://exa'
    found = read_opened(documents.wallabag, data, 5)
    assert isinstance(found[0], Entry) and found[0].url == "https://example.com/a"
    assert isinstance(found[1], Broken) and found[1].place == "after entry 1" and len(found) == 2


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_a_fault_keeps_every_entry_before_it_whatever_chunk_it_arrives_in(chunk: int) -> None:
    data = b'[{"url":"https://example.com/a"},{"url":"https://example.com/b"},{"url": nope}]'
    found = read_opened(documents.wallabag, data, chunk)
    assert [(type(item).__name__, item.place) for item in found] == [
        ("Entry", "entry 1"),
        ("Entry", "entry 2"),
        ("Broken", "after entry 2"),
    ]


WALLABAG = '[{"url": "https://example.com/a", "title": "Café ☕ 😀"}, {"url": "https://example.com/b"}]'


@pytest.mark.parametrize(
    "encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
@pytest.mark.parametrize("chunk", [1, 3, 4096])
def test_a_file_in_any_unicode_encoding_json_allows_is_read(encoding: str, chunk: int) -> None:
    found = entries(read_opened(documents.wallabag, WALLABAG.encode(encoding), chunk))
    assert [(entry.url, entry.title) for entry in found] == [
        ("https://example.com/a", "Café ☕ 😀"),
        ("https://example.com/b", None),
    ]


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_bytes_that_are_no_text_fail_their_entry_alone(chunk: int) -> None:
    # A Windows-1252 "é" (one byte, no UTF-8) in the second of three entries of a UTF-8 file.
    data = (
        '[{"url": "https://example.com/a", "title": "Café"}, '.encode()
        + b'{"url": "https://example.com/b", "title": "'
        + "Caf\xe9".encode("cp1252")
        + b'"}, {"url": "https://example.com/c"}]'
    )
    found = read_opened(documents.wallabag, data, chunk)
    assert [(type(item).__name__, item.place) for item in found] == [
        ("Entry", "entry 1"),
        ("Broken", "entry 2"),
        ("Entry", "entry 3"),
    ]
    assert found[0].title == "Café"  # type: ignore[union-attr]
    assert found[1].reason == (  # type: ignore[union-attr]
        "a value of it holds bytes that are no text in the file's encoding: not taken"
    )


def test_a_linkwarden_backup_broken_before_its_links_says_where() -> None:
    data = (
        b'{"collections": [{"id": 1, "name": "A", "links": [{"url": "https://example.com/a"}]}], '
        b'"pinnedLinks": [x'
    )
    found = read_opened(documents.linkwarden, data)
    assert [(type(item).__name__, item.place) for item in found] == [
        ("Entry", "link 1"),
        ("Broken", "after link 1"),
    ]


def test_values_that_are_no_objects_fail_alone() -> None:
    found = read_opened(documents.wallabag, b'[1, "x", {"url": "https://example.com/b"}]')
    assert [type(item).__name__ for item in found] == ["Broken", "Broken", "Entry"]
    assert found[0].place == "entry 1"  # type: ignore[union-attr]


def test_nesting_ten_thousand_deep_fails_its_entry_alone_without_recursion() -> None:
    data = b'[{"url":"https://example.com/a","x":' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    data += b',{"url":"https://example.com/b","x":' + b"[" * 31 + b"]" * 31 + b"}]"
    found = read_opened(documents.wallabag, data, 4096)
    assert [(type(item).__name__, item.place) for item in found] == [
        ("Broken", "entry 1"),
        ("Entry", "entry 2"),
    ]
    assert found[0].reason == "it nests over 32 levels deep, more than any export's entry: not taken"  # type: ignore[union-attr]


def test_no_json_at_all_is_one_broken_entry() -> None:
    found = read_opened(documents.karakeep, b"<html>not json</html>")
    assert len(found) == 1 and isinstance(found[0], Broken) and found[0].place == "after bookmark 0"


def test_a_200_mb_string_fails_its_entry_alone_in_bounded_memory() -> None:
    def file() -> Iterator[bytes]:  # 200 MiB, made as it is read: the test holds none of it
        yield b'[{"url":"https://example.com/a"},{"url":"https://example.com/big","content":"'
        block = b"x" * (1024 * 1024)
        for _ in range(200):
            yield block
        yield b'"},{"url":"https://example.com/c","title":"after"}]'

    tracemalloc.start()
    try:
        items = list(documents.wallabag(file))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(type(item).__name__, item.place) for item in items] == [
        ("Entry", "entry 1"),
        ("Broken", "entry 2"),
        ("Entry", "entry 3"),
    ]
    assert items[1].reason == "a value of it is over 4 MiB: not taken"  # type: ignore[union-attr]
    assert isinstance(items[2], Entry) and items[2].title == "after"
    assert peak < 16 * 1024 * 1024  # the 4 MiB held at most, a chunk, and the parser's own
