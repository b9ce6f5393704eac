"""Pocket's ZIP export of 2025 (cardvault.domain.portability.imports.formats.zipped): its CSV parts in
the order of their numbers, each row's highlights joined by URL from its annotations, its
shareable lists counted, a ZIP made again from its folder read the same."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import Highlight, zipped
from tests.unit.domain.portability.imports.formats.conftest import (
    FIXTURES,
    broken,
    members_of,
    read_opened,
    taken,
    zipped_bytes,
)

POCKET = FIXTURES / "pocket2025"


@pytest.mark.parametrize("folder", ["", "pocket/"])
def test_pocket_rows_take_their_highlights_by_url_and_the_lists_are_counted(folder: str) -> None:
    items = read_opened(zipped.pocket, zipped_bytes(members_of(POCKET, folder)), 1000)
    found = taken(items)
    assert broken(items) == []
    assert [(e.place, e.title, e.tags, e.archived) for e in found] == [
        (f"{folder}part_000000.csv, line 2", "How to Do Great Work", ["essays", "career"], False),
        (
            f"{folder}part_000000.csv, line 3",
            'Falsehoods programmers believe about time, and "time zones"',
            [],
            True,
        ),
        (
            f"{folder}part_000000.csv, line 4",
            "The Log: What every software engineer should know about real-time data's unifying abstraction",
            ["programming", "distributed systems"],
            True,
        ),
        (
            f"{folder}part_000000.csv, line 5",
            "Über die Kunst, langsam zu lesen – 日本語の読書術",
            ["lesen", "日本語"],
            False,
        ),
        (f"{folder}part_000000.csv, line 6", None, [], False),  # Pocket wrote the URL as its title
    ]
    assert found[0].highlights == [
        Highlight("The way to figure out what to work on is by working."),
        Highlight(
            "Curiosity is the best guide. Your curiosity never lies, and it knows more than you do "
            "about what's worth paying attention to."
        ),
    ]
    assert found[3].highlights == [
        Highlight("Wer langsam liest, liest zweimal – „das Buch öffnet sich erst beim zweiten Blick“.")
    ]
    assert [e.highlights for e in found[1:3] + found[4:]] == [[], [], []]
    assert found[0].created_at == 1689002113000
    assert [e.unmapped for e in found] == [["collections"], [], [], [], []]  # one shareable list


def test_pocket_parts_are_read_by_their_numbers_and_stray_highlights_are_reported() -> None:
    header = b"title,url,time_added,tags,status\n"
    members = {
        "part_000010.csv": header + b"Ten,https://ten.example/,1700000000,,unread\n",
        "part_000002.csv": header + b"Two,https://two.example/,1700000000,,unread\n",
        "annotations/part_000000.json": b'[{"url":"https://gone.example/","title":"x","highlights":[{"quote":"q","created_at":1}]}]',
    }
    items = read_opened(zipped.pocket, zipped_bytes(members))
    assert [e.title for e in taken(items)] == ["Two", "Ten"]
    assert broken(items) == [
        ("annotations", "the highlights of 1 pages name a URL no saved item has: not kept")
    ]
