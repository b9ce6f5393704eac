"""Pocket's CSV (from its ZIP since October 2024, with the ``cursor`` column until March 2025)."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import delimited
from tests.unit.domain.portability.imports.formats.conftest import entries, fixture, read


@pytest.mark.parametrize("name", ["pocket.csv", "pocket_2024_with_cursor.csv"])
def test_tags_split_on_pipes_status_archive_and_the_url_as_title_means_none(name: str) -> None:
    found = entries(read(delimited.pocket, fixture(name), 11))
    assert [(e.url, e.title, e.tags, e.archived) for e in found] == [
        (
            "https://example.com/articles/async-rust?ref=feed&utm_source=newsletter",
            'Async Rust, explained: "futures" & executors',
            ["rust", "programming"],
            False,
        ),
        (
            "https://de.example.org/stra%C3%9Fen-und-br%C3%BCcken",
            "Über Straßen & Brücken — ein Überblick",
            ["reise", "straßen"],
            True,
        ),
        ("https://docs.example.io/guide/getting-started", None, [], False),  # Pocket wrote the URL as title
        (
            "https://blog.example.net/2024/03/on-quoting",
            'He said "hello", then left <a short story>',
            [],
            True,
        ),
        ("https://ja.example.jp/%E8%AA%AD%E6%9B%B8", "読書メモ：東京の本屋", ["日本語"], False),
    ]
    assert found[0].created_at == 1709302567000 and found[0].place == "line 2"
