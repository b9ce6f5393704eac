"""What the JSON readers share: a file that stops being JSON, values that are no objects, and
nesting far deeper than any export's."""

from __future__ import annotations

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
