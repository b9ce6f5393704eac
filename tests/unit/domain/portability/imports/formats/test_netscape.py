"""Netscape bookmark files as each browser and service writes them (fixtures under
tests/fixtures/imports), read a chunk at a time."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import Broken, Entry, Highlight, netscape
from tests.unit.domain.portability.imports.formats.conftest import entries, fixture, read

ASYNC = "https://example.com/articles/async-rust?ref=feed&utm_source=newsletter"
ASYNC_TITLE = 'Async Rust, explained: "futures" & executors'


@pytest.mark.parametrize("chunk", [7, 64 * 1024])
def test_chrome_folders_titles_times_and_the_bar_as_no_folder(chunk: int) -> None:
    found = entries(read(netscape.read, fixture("netscape_chrome.html"), chunk))
    assert [(e.url, e.title, e.folder) for e in found] == [
        (ASYNC, ASYNC_TITLE, []),  # on the bookmarks bar
        (
            "https://docs.example.io/guide/getting-started",
            "Getting started · Example Docs",
            ["Work", "Projects"],
        ),
        (
            "https://de.example.org/stra%C3%9Fen-und-br%C3%BCcken",
            "Über Straßen & Brücken — ein Überblick",
            [],
        ),
        (
            "https://blog.example.net/2024/03/on-quoting",
            'He said "hello", then left <a short story>',
            ["Reading"],
        ),
        ("https://ja.example.jp/%E8%AA%AD%E6%9B%B8", "読書メモ：東京の本屋", ["Reading"]),
    ]
    assert found[0].created_at == 1709302567000  # ADD_DATE is in seconds
    assert found[0].unmapped == ["icon"] and found[1].unmapped == []
    assert [e.place for e in found] == [f"bookmark {n}" for n in range(1, 6)]


def test_edge_reads_as_chrome() -> None:
    chrome = read(netscape.read, fixture("netscape_chrome.html"))
    assert read(netscape.read, fixture("netscape_edge.html")) == chrome


def test_firefox_tags_and_its_toolbar_and_other_bookmarks_as_no_folder() -> None:
    found = entries(read(netscape.read, fixture("netscape_firefox.html"), 13))
    assert [(e.title, e.tags, e.folder) for e in found] == [
        (ASYNC_TITLE, ["rust", "programming"], []),
        ("Getting started · Example Docs", [], ["Work", "Projects"]),
        ("Über Straßen & Brücken — ein Überblick", ["reise", "straßen"], []),
        ('He said "hello", then left <a short story>', [], []),
        ("読書メモ：東京の本屋", ["日本語", "to-read"], []),
    ]


def test_pinboard_descriptions_are_notes_and_its_private_and_toread_flags_are_reported() -> None:
    found = entries(read(netscape.read, fixture("netscape_pinboard.html"), 5))
    assert found[0].notes == ["How executors poll futures, and why nothing happens until you .await"]
    assert found[0].tags == ["rust", "programming"]
    assert found[1].unmapped == ["private", "toread"]
    assert found[3].title is None and found[3].tags == ["日本語", "books"]


def test_raindrop_notes_highlights_favorites_and_unsorted_as_no_folder() -> None:
    found = entries(read(netscape.read, fixture("netscape_raindrop.html"), 11))
    assert found[0].folder == []  # Unsorted
    rust = found[1]
    assert rust.notes == ["Read before the team workshop.\nSecond line of the note."]
    assert rust.highlights == [
        Highlight("Executors poll futures until they are ready."),
        Highlight("Nothing happens until a future is polled."),
    ]
    assert rust.favorite and rust.tags == ["rust", "programming"]
    assert found[3].unmapped == ["cover"] and found[3].folder == ["Work", "Projects"]


def test_safari_folders_and_reading_list_previews() -> None:
    found = entries(read(netscape.read, fixture("netscape_safari.html"), 9))
    assert [e.folder for e in found] == [
        ["Favorites"],
        ["Favorites", "Work", "Projects"],
        ["Bookmarks Menu"],
        ["Reading List"],
    ]
    assert found[3].notes == ["A short story about quoting, commas and angle brackets."]
    assert all(e.created_at is None for e in found)


def test_pockets_old_html_export_archives_what_it_lists_under_read_archive() -> None:
    found = entries(read(netscape.read, fixture("pocket_legacy_ril_export.html")))
    assert [(e.archived, e.tags) for e in found] == [
        (False, ["rust", "programming"]),
        (False, ["日本語"]),
        (True, ["reise", "straßen"]),
    ]


def test_an_anchor_without_href_is_no_bookmark_and_a_relative_one_is_kept_for_the_job_to_refuse() -> None:
    data = b"<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><A>no link</A>"
    data += b'<DT><A HREF="javascript:alert(1)">x</A></DL>'
    found = entries(read(netscape.read, data))
    assert [(e.url, e.title) for e in found] == [("javascript:alert(1)", "x")]


def test_folders_nested_ten_thousand_deep_are_read_in_one_pass() -> None:
    depth = 10_000
    data = b"<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p>" + b"<DT><H3>f</H3><DL><p>" * depth
    data += b'<DT><A HREF="https://example.com/deep">deep</A>' + b"</DL><p>" * depth + b"</DL>"
    (deep,) = entries(read(netscape.read, data))
    assert deep.url == "https://example.com/deep" and deep.folder == ["f"] * netscape.FOLDER_DEPTH


def test_an_unclosed_comment_ends_the_file_as_one_broken_entry_after_a_bounded_wait() -> None:
    data = b'<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><A HREF="https://example.com/a">a</A><!--'
    data += b"x" * (netscape.PENDING_LIMIT + 4096)
    found = read(netscape.read, data, 4096)
    assert isinstance(found[0], Entry) and found[0].url == "https://example.com/a"
    assert isinstance(found[-1], Broken) and "unfinished" in found[-1].reason and len(found) == 2


def test_a_file_that_is_not_utf8_is_read_as_windows_1252() -> None:
    data = b'<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><A HREF="https://example.com/a">caf\xe9</A></DL>'
    (entry,) = entries(read(netscape.read, data))
    assert entry.title == "caf\u00e9"


def test_markup_the_parser_gives_up_on_ends_the_file_as_one_broken_entry() -> None:
    data = b'<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><A HREF="https://example.com/a">a</A><![foo[ x'
    found = read(netscape.read, data + b"\n" * 10)
    assert isinstance(found[-1], Broken)


def test_a_file_ending_in_a_long_unfinished_comment_is_not_left_to_the_slow_close() -> None:
    data = b'<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><A HREF="https://example.com/a">a</A><!--'
    found = read(netscape.read, data + b"x" * (netscape.CLOSE_LIMIT + 10))
    assert [type(item).__name__ for item in found] == ["Entry", "Broken"]
    assert "ends inside" in found[1].reason  # type: ignore[union-attr]


def test_a_title_keeps_its_first_characters_only() -> None:
    data = b'<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><A HREF="https://example.com/a">'
    data += b"t" * (netscape.TEXT_LIMIT * 3) + b"</A></DL>"
    (entry,) = entries(read(netscape.read, data, 4096))
    assert entry.title == "t" * netscape.TEXT_LIMIT
