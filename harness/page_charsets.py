"""Pages made of the worst bytes for each family of decoders a page's charset label can choose,
and for labels that must choose none: the hostile corpus of link pages
(tests/hostile/test_hostile_pages.py) and bench/bench_pages.py read the same ones.

``FAMILIES`` maps a label to the bytes repeated to fill a page; ``page`` builds one of a given
size."""

from __future__ import annotations

PAGE = b"<html><head><title>t</title></head><body><p>p</p></body></html>"

FAMILIES: dict[str, bytes] = {
    "utf-8": b"\xf0\x9f\x98" + b"\xed\xa0\x80",  # truncated and surrogate sequences
    "windows-1252": bytes(range(128, 256)),  # single-byte: every high byte
    "koi8-r": bytes(range(256)),
    "x-mac-cyrillic": bytes(range(256)),
    "ibm866": bytes(range(256)),
    "gb18030": b"\x81\x30\x81" + b"\x81\x30\x81\x30" + b"\xfe",  # four-byte forms, cut short
    "gbk": b"\x81" + b"\xa1\xa1",
    "big5": b"\x87\x40" + b"\xfe",
    "shift_jis": b"\x81" + b"\xe0\x40" + b"\xa0",
    "euc-jp": b"\x8f\xa1" + b"\x8e",
    "euc-kr": b"\x81\x41" + b"\xc8",
    "iso-2022-jp": b"\x1b$B" + b"\x1b(J" + b"\x1b(I!" + b"\x1b",  # escape after escape
    "utf-16le": b"\x00\xd8" + b"\x00\xdc\x00\xdc",  # lone surrogates
    "utf-16be": b"\xd8\x00" + b"\xdc\x00\xdc\x00",
    "x-user-defined": bytes(range(256)),
    "iso-2022-kr": bytes(range(256)),  # the replacement decoder
    # Labels the Encoding Standard does not list: each must read as UTF-8.
    "punycode": b"a" * 64,  # no '-': every 'a' is one insertion into all before it
    "utf-7": b"+" + b"A" * 63,
    "idna": b"xn--" + b"a" * 60 + b".",
    "zlib": b"x\x9c" + b"\x00" * 62,
    "unicode_escape": b"\\" * 64,
    "utf-32": b"\x00\x00\x11\x00",
}


def page(label: str, size: int) -> bytes:
    """A page of about ``size`` bytes: the label's bytes first (some decoders stop at a '<'), then
    a small document."""
    repeated = FAMILIES[label]
    return repeated * ((size - len(PAGE)) // len(repeated)) + PAGE
