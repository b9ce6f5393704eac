"""A page's bytes as text: whether they are HTML, and how a browser decodes them.

Only the labels of the WHATWG Encoding Standard name a decoder (looked up by webencodings, which
implements its table): ``iso-8859-1`` reads as windows-1252, ``utf-16`` as UTF-16LE, and a byte
order mark wins over any label, as in browsers. Any other label, such as ``punycode`` or
``zlib`` (Python codecs that are quadratic in their input, or not text decoders at all), reads
as UTF-8, like a page with no label. Every decoder of the standard is linear in its input."""

from __future__ import annotations

import re

import webencodings

_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)
_UTF_8 = webencodings.lookup("utf-8")


def looks_like_html(body: bytes) -> bool:
    """Whether the bytes start as an HTML document does."""
    start = body[:512].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<meta", b"<title"))


def page_encoding(body: bytes, content_type: str | None) -> webencodings.Encoding:
    """The encoding the header's charset names, else the meta tag's, else UTF-8; a label the
    Encoding Standard does not list counts as none (the next source is asked)."""
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset":
            found = webencodings.lookup(value.strip().strip("\"'"))
            if found is not None:
                return found
    meta = _META_CHARSET.search(body[:4096])
    found = webencodings.lookup(meta.group(1).decode("ascii")) if meta else None
    return found or _UTF_8


def decode_page(body: bytes, content_type: str | None) -> str:
    """The page's text as a browser decodes it: a byte order mark, else its labels (see
    ``page_encoding``); bytes its encoding cannot read become U+FFFD."""
    text: str = webencodings.decode(body, page_encoding(body, content_type), errors="replace")[0]
    return text
