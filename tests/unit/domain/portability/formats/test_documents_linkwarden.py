"""Linkwarden's JSON backup: collections (nested) as folders, tags by name, pins as favorites."""

from __future__ import annotations

from cardvault.domain.portability.formats import documents
from tests.unit.domain.portability.formats.conftest import entries, fixture, read_opened


def test_collections_descriptions_tags_and_pins() -> None:
    found = entries(read_opened(documents.linkwarden, fixture("linkwarden.json"), 101))
    quoting, rust, docs, roads = found
    assert quoting.folder == []  # Linkwarden's own Unorganized
    assert (rust.folder, rust.tags, rust.favorite) == (["Work"], ["rust", "programming"], True)
    assert rust.notes == ["Read before the team workshop."] and rust.excerpt == "How executors poll futures."
    assert rust.created_at == 1709302567482
    assert docs.folder == ["Work", "Projects"] and not docs.favorite
    assert roads.tags == ["reise"] and roads.place == "link 4"
