"""wallabag's JSON export: stars, archive, tags, annotations as highlights, escaped text."""

from __future__ import annotations

from cardvault.domain.portability.formats import documents
from tests.unit.domain.portability.formats.conftest import entries, fixture, read_opened


def test_flags_tags_annotations_and_what_is_not_kept() -> None:
    found = entries(read_opened(documents.wallabag, fixture("wallabag.json"), 33))
    rust, roads, quoting, books = found
    assert (rust.favorite, rust.archived, rust.created_at) == (True, False, 1709302567000)  # +01:00
    assert rust.highlights == ["Executors poll futures until they are ready.\n\nKey idea"]
    assert rust.unmapped == ["content", "preview_picture"]
    assert roads.title == "Über Straßen & Brücken — ein Überblick" and roads.archived  # from \\u escapes
    assert quoting.tags == [] and books.tags == ["日本語", "books"] and books.favorite and books.archived
