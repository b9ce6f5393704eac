"""What every CSV reader shares: headers in any order and case, records that cannot be read,
lines too long, and the file's encoding."""

from __future__ import annotations

from cardvault.domain.portability.imports.formats import LINE_LIMIT, Broken, delimited
from tests.unit.domain.portability.imports.formats.conftest import entries, read

HEADER = b"title,url,time_added,tags,status\n"


def test_columns_are_found_by_name_in_any_order_and_case() -> None:
    data = b"Status, URL ,Title,TAGS,time_added\narchive,https://example.com/a,A,x|y,1700000000\n"
    (entry,) = entries(read(delimited.pocket, data))
    assert (entry.url, entry.title, entry.tags, entry.archived) == (
        "https://example.com/a",
        "A",
        ["x", "y"],
        True,
    )


def test_a_record_with_more_fields_than_the_header_fails_alone() -> None:
    data = HEADER + b"A,https://example.com/a,1,,unread,extra\nB,https://example.com/b,1,,unread\n"
    found = read(delimited.pocket, data)
    assert isinstance(found[0], Broken) and found[0].place == "line 2" and "6 fields" in found[0].reason
    assert [e.url for e in entries(found[1:])] == ["https://example.com/b"]


def test_a_field_over_the_record_limit_ends_the_file_as_one_broken_entry() -> None:
    data = HEADER + b"A,https://example.com/a,1,,unread\n"
    data += b'B,"' + b"x" * (delimited.RECORD_LIMIT + 1) + b'",1,,unread\nC,https://example.com/c,1,,unread\n'
    found = read(delimited.pocket, data)
    assert [type(item).__name__ for item in found] == ["Entry", "Broken"]
    assert found[1].place == "line 3" and "over 1024 KiB" in found[1].reason  # type: ignore[union-attr]


def test_a_line_over_the_limit_ends_the_file_as_a_broken_entry() -> None:
    data = HEADER + b"A,https://example.com/a,1,,unread\n" + b"x" * (LINE_LIMIT + 10)
    found = read(delimited.pocket, data)
    assert [type(item).__name__ for item in found] == ["Entry", "Broken"]
    assert "the rest of the file was not read" in found[1].reason  # type: ignore[union-attr]


def test_windows_1252_utf16_and_a_utf8_byte_order_mark() -> None:
    text = "title,url,time_added,tags,status\nCafé,https://example.com/a,1,crème,unread\n"
    for data in (text.encode("cp1252"), text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode()):
        (entry,) = entries(read(delimited.pocket, data, 3))
        assert (entry.title, entry.tags) == ("Café", ["crème"]), data[:4]


def test_empty_lines_and_an_empty_file_are_nothing() -> None:
    assert read(delimited.pocket, b"") == []
    assert read(delimited.pocket, HEADER + b"\n\n,,,,\n") == []


def test_only_cr_and_lf_break_lines() -> None:
    data = (
        HEADER
        + "A\u2028B\x0cC\x85D,https://example.com/a,1,,unread\r".encode()
        + b"B,https://example.com/b,1,,unread"
    )
    first, second = entries(read(delimited.pocket, data, 5))
    assert first.title == "A\u2028B\x0cC\x85D" and second.url == "https://example.com/b"


def test_an_unclosed_quote_that_runs_on_ends_the_file_once_its_record_passes_the_limit() -> None:
    data = HEADER + b'A,"' + b"a\n" * (delimited.RECORD_LIMIT // 2 + 10)
    found = read(delimited.pocket, data)
    assert len(found) == 1 and isinstance(found[0], Broken) and "record" in found[0].reason
