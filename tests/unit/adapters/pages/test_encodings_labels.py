"""Which decoder a page's charset label chooses: only the WHATWG Encoding Standard's labels name
one, as in browsers; any other label (Python codecs such as punycode, quadratic in the input, or
zlib, not a text decoder at all) reads as UTF-8."""

from __future__ import annotations

import pytest

from cardvault.adapters.pages import read_page
from cardvault.adapters.pages.encodings import decode_page, page_encoding

TITLE = "Café – Ünïcode ☕"


def page(title: str = TITLE, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body><p>Text.</p></body></html>"


@pytest.mark.parametrize(
    "label",
    [
        "punycode",
        "idna",
        "utf-7",
        "rot13",
        "zlib",
        "base64",
        "hex",
        "uu",
        "bz2",
        "unicode_escape",
        "utf-32",
        "cp037",
    ],
)
def test_a_label_the_standard_does_not_list_reads_as_utf_8(label: str) -> None:
    body = page().encode()
    assert page_encoding(body, f"text/html; charset={label}").name == "utf-8"
    read = read_page(body, url="https://example.com/", content_type=f"text/html; charset={label}")
    assert read.title == TITLE


def test_a_meta_label_the_standard_does_not_list_reads_as_utf_8() -> None:
    body = page(head='<meta charset="punycode">').encode()
    assert read_page(body, url="https://example.com/", content_type="text/html").title == TITLE


def test_an_unlisted_header_label_leaves_the_choice_to_the_meta_tag() -> None:
    body = page("Привет", head='<meta charset="windows-1251">').encode("cp1251")
    assert decode_page(body, "text/html; charset=punycode").count("Привет") == 1


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("ISO-8859-1", "cp1252"),
        ("latin1", "cp1252"),
        ("us-ascii", "cp1252"),
        ("koi8-r", "koi8-r"),
        ("shift_jis", "cp932"),
        ("gb2312", "gbk"),
        ("euc-kr", "cp949"),
        (" UTF-8 ", "utf-8"),
    ],
)
def test_a_listed_label_names_its_decoder_as_in_the_standard(label: str, codec: str) -> None:
    text = (
        "Ключ ключ" if codec == "koi8-r" else ("日本語" if codec in ("cp932", "gbk", "cp949") else "“Café”")
    )
    body = page(text).encode(codec)
    assert decode_page(body, f"text/html; charset={label}").count(text) == 1


def test_utf_16_reads_as_little_endian() -> None:
    body = page().encode("utf-16-le")
    assert decode_page(body, "text/html; charset=utf-16").count(TITLE) == 1


def test_a_byte_order_mark_wins_over_the_label() -> None:
    body = b"\xfe\xff" + page().encode("utf-16-be")
    assert (
        read_page(body, url="https://example.com/", content_type="text/html; charset=windows-1252").title
        == TITLE
    )


def test_the_replacement_labels_read_as_nothing_but_replacement_characters() -> None:
    # iso-2022-kr and hz-gb-2312 are listed only to be refused: a browser shows U+FFFD.
    assert set(decode_page(page().encode(), "text/html; charset=iso-2022-kr")) == {"\ufffd"}
