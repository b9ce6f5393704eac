"""Raindrop.io's CSV: collections as `` / `` paths, notes, excerpts, highlights, favorites."""

from __future__ import annotations

from cardvault.domain.portability.imports.formats import Highlight, delimited
from tests.unit.domain.portability.imports.formats.conftest import entries, fixture, read


def test_every_column_maps_and_a_note_spans_lines() -> None:
    found = entries(read(delimited.raindrop, fixture("raindrop.csv"), 17))
    assert [e.folder for e in found] == [[], ["Work"], ["Work", "Projects"], ["Work", "Projects"]]
    quoting, rust, docs, roads = found
    assert (
        quoting.excerpt == "A short story about quoting, commas and angle brackets."
        and quoting.created_at == 1710000000000
    )
    assert rust.notes == ["Read before the team workshop.\nSecond line of the note."]
    assert rust.highlights == [
        Highlight("Executors poll futures until they are ready."),
        Highlight("Nothing happens until a future is polled."),
    ]
    assert rust.tags == ["rust", "programming"] and rust.favorite and rust.unmapped == ["cover"]
    assert rust.created_at == 1709302567482 and rust.place == "line 3"
    assert docs.tags == [] and not docs.favorite and docs.unmapped == []
    assert roads.tags == ["reise", "straßen"] and roads.place == "line 8"


def test_an_older_export_without_id_and_favorite_columns() -> None:
    data = b"title,note,excerpt,url,folder,tags,created,cover,highlights\nA,,,https://example.com/a,Unsorted,x,2020-01-01T00:00:00.000Z,,\n"
    (entry,) = entries(read(delimited.raindrop, data))
    assert (entry.url, entry.tags, entry.folder, entry.favorite) == (
        "https://example.com/a",
        ["x"],
        [],
        False,
    )
