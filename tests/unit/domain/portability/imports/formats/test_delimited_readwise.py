"""Readwise Reader's CSV: Python-list tags, locations, feed items left out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.portability.imports.formats import delimited
from tests.unit.domain.portability.imports.formats.conftest import entries, fixture, read


def test_tags_locations_and_feed_items() -> None:
    found = entries(read(delimited.readwise, fixture("readwise.csv"), 23))
    assert [(e.title, e.tags, e.archived) for e in found] == [
        ('Async Rust, explained: "futures" & executors', ["rust", "programming"], False),
        ("Über Straßen & Brücken — ein Überblick", ["reise", "straßen"], True),
        ('He said "hello", then left <a short story>', ["it's quoted", "essays"], False),
        ("Getting started · Example Docs", [], False),
    ]  # the fifth row is a feed item, never saved
    assert found[0].created_at == 1709302567482 and found[1].created_at == 1712345678000
    assert found[0].unmapped == ["reading progress"] and found[2].unmapped == []


def test_a_tag_list_is_read_without_evaluating_it() -> None:
    data = b"Title,URL,Document tags,Saved date,Reading progress,Location,Seen\n"
    data += b"A,https://example.com/a,\"[__import__('os'), 'ok', 'a\\'b']\",,0,new,False\n"
    (entry,) = entries(read(delimited.readwise, data))
    assert entry.tags == ["os", "ok", "a'b"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab '\"\\,[]é"), max_size=6), max_size=6))
def test_a_tag_list_reads_as_python_wrote_it(tags: list[str]) -> None:
    assert delimited._python_strings(repr(tags)) == [tag for tag in tags if tag.strip()]


@pytest.mark.parametrize(
    "field",
    [
        "'" + "\\'" * 500_000,  # the hostile review's: a quote never closed, every later one escaped
        '"' + '\\"' * 250_000 + "'" + "\\'" * 250_000,
        "'a', " * 200_000 + '"',  # a double quote at the end, never closed, after many strings
    ],
)
def test_a_tag_field_of_a_megabyte_that_never_closes_is_read_in_one_pass(field: str) -> None:
    # (Linear: tests/hostile/test_hostile_regex.py reads such fields at 1, 2 and 4 MiB under a CPU cap.)
    tags = delimited._python_strings(field)
    assert tags == (["a"] * 200_000 if field.startswith("'a'") else [])
