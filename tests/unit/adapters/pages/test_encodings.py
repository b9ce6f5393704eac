"""A page's bytes as text (cardvault.adapters.pages.encodings), read through read_page: what is
HTML, and charset labels as browsers read them."""

from __future__ import annotations

from cardvault.adapters.pages import read_page
from tests.unit.adapters.pages.test_init import html


def test_html_without_a_content_type_is_read_as_html() -> None:
    page = read_page(
        b'<html><head><meta property="og:title" content="Sniffed"></head><body></body></html>',
        url="https://www.example.org/sniffed",
        content_type=None,
    )
    assert page.title == "Sniffed"
    assert page.content_type == "text/html"


def test_an_iso_8859_1_label_reads_as_windows_1252_like_browsers() -> None:
    """The HTML encoding standard reads the iso-8859-1 label as windows-1252, so 0x93/0x94 are
    quotation marks, not C1 control characters."""
    body = html('<meta charset="iso-8859-1"><meta property="og:title" content="Das “Café”">')
    page = read_page(
        body.decode().encode("cp1252"), url="https://www.example.at/cafe", content_type="text/html"
    )
    assert page.title == "Das “Café”"
