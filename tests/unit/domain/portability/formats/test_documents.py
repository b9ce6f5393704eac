"""What the JSON readers share: a file that stops being JSON, values that are no objects,
nesting far deeper than any export's, and strings too long to build (a 200 MB one fails its
entry alone, in bounded memory)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.portability.formats import Broken, Entry, documents
from tests.unit.domain.portability.formats.conftest import read_opened


def test_a_file_that_breaks_off_keeps_what_came_before_and_says_where() -> None:
    data = b'[{"url":"https://example.com/a"},{"url":"https://exa'
    found = read_opened(documents.wallabag, data, 5)
    assert isinstance(found[0], Entry) and found[0].url == "https://example.com/a"
    assert isinstance(found[1], Broken) and found[1].place == "after entry 1" and len(found) == 2


def test_values_that_are_no_objects_fail_alone() -> None:
    found = read_opened(documents.wallabag, b'[1, "x", {"url": "https://example.com/b"}]')
    assert [type(item).__name__ for item in found] == ["Broken", "Broken", "Entry"]
    assert found[0].place == "entry 1"  # type: ignore[union-attr]


def test_nesting_ten_thousand_deep_is_read_without_recursion() -> None:
    data = b'[{"url":"https://example.com/a","x":' + b"[" * 10_000 + b"]" * 10_000 + b"}]"
    (entry,) = read_opened(documents.wallabag, data, 4096)
    assert isinstance(entry, Entry) and entry.url == "https://example.com/a"


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


JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from('ab"\\\n\x00é€😀/')),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_TEXT, ascii_only=st.booleans(), chunk=st.integers(1, 40), limit=st.integers(2, 60))
def test_the_string_guard_replaces_exactly_the_strings_over_the_limit_wherever_chunks_end(
    value: Any, ascii_only: bool, chunk: int, limit: int
) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()

    def cut(text: str) -> str:
        return text if len(json.dumps(text, ensure_ascii=ascii_only).encode()) <= limit else "\x00"

    def expected(node: Any) -> Any:
        if isinstance(node, str):
            return cut(node)
        if isinstance(node, list):
            return [expected(item) for item in node]
        if isinstance(node, dict):  # keys are strings too (two cut keys merge, the last kept)
            return {cut(key): expected(item) for key, item in node.items()}
        return node

    guard = documents._Strings()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(documents, "STRING_LIMIT", limit)
        out = b"".join(guard(data[i : i + chunk] for i in range(0, len(data), chunk)))
    kept = json.loads(out)
    assert kept == expected(value)
