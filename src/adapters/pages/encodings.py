"""A page's bytes as text: whether they are HTML, and the charset its header or meta tag names,
read as browsers read the labels."""

from __future__ import annotations

import re

_WINDOWS_1252_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "us-ascii", "ascii", "cp819"}
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)


def looks_like_html(body: bytes) -> bool:
    """Whether the bytes start as an HTML document does."""
    start = body[:512].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<meta", b"<title"))


def decode_page(body: bytes, content_type: str | None) -> str:
    """The page's text: in the charset its header names, else its meta tag's, else UTF-8."""
    charset = None
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset":
            charset = value.strip().strip("\"'")
    if charset is None:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    if charset is not None and charset.lower() in _WINDOWS_1252_LABELS:
        charset = "cp1252"  # as browsers read them (the WHATWG Encoding Standard)
    for candidate in (charset, "utf-8"):
        if candidate:
            try:
                return body.decode(candidate, errors="replace")
            except LookupError:
                continue
    return body.decode("utf-8", errors="replace")
