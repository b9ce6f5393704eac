"""A page's head: its meta tags, Open Graph properties, title, canonical link and icons
(selectolax), read from the part of the page before its body."""

from __future__ import annotations

import re
from typing import Any

from cardvault.adapters.pages.values import absolute_url

HEAD_CHARS = 512 * 1024  # the part of a page its head is looked for in
HEAD_BLOCKS = 1000  # block elements a head is read past
_HEAD_END = re.compile(r"</head\s*>|<body[\s>]", re.I)
_BLOCK = re.compile(r"<(?:div|p|section|article|ul|ol|li|table|form)[\s>]", re.I)


def head_of(html: str) -> str:
    """The page's head as written (up to ``</head>`` or ``<body``), at most HEAD_CHARS and at
    most HEAD_BLOCKS block elements: a head holds none, and thousands of nested ones would cost
    the parser time that grows with their square."""
    end = _HEAD_END.search(html, 0, HEAD_CHARS)
    head = html[: end.start() if end else HEAD_CHARS]
    for count, block in enumerate(_BLOCK.finditer(head), start=1):
        if count > HEAD_BLOCKS:
            return head[: block.start()]
    return head


class Head:
    """The head's meta tags (by name or property, first wins), its Open Graph properties
    (og:, article:, product: and the like, every value in page order, wherever a stray element
    put them) and its links."""

    def __init__(self, tree: Any, url: str) -> None:
        self.meta: dict[str, str] = {}
        self.properties: dict[str, list[str]] = {}
        for node in tree.css("meta[content]"):
            content = node.attributes.get("content") or ""
            key = (node.attributes.get("name") or node.attributes.get("property") or "").strip().lower()
            if key and key not in self.meta:
                self.meta[key] = content
            prop = (node.attributes.get("property") or "").strip().lower()
            if ":" in prop:
                self.properties.setdefault(prop, []).append(content)
        title = tree.css_first("title")
        self.title = title.text() if title is not None else None
        self.canonical: str | None = None
        self._icons: list[tuple[int, str]] = []
        self._url = url
        for node in tree.css("link[href]"):
            rel = (node.attributes.get("rel") or "").lower().split()
            href = node.attributes.get("href") or ""
            if "canonical" in rel and self.canonical is None:
                self.canonical = href
            if "icon" in rel or "apple-touch-icon" in rel:
                self._icons.append(
                    (_icon_size(node.attributes.get("sizes"), "apple-touch-icon" in rel), href)
                )

    def favicon(self) -> str | None:
        """The largest icon up to 256 px the page names, else the site's /favicon.ico."""
        fitting = sorted((size, href) for size, href in self._icons if size <= 256)
        for _, href in reversed(fitting):
            absolute = absolute_url(href, self._url)
            if absolute:
                return absolute
        return absolute_url("/favicon.ico", self._url)


def _icon_size(sizes: str | None, touch: bool) -> int:
    """An icon's size from its ``sizes`` (its largest); an apple-touch-icon with none is 180."""
    best = 0
    for size in (sizes or "").lower().split():
        width, _, height = size.partition("x")
        if width.isascii() and width.isdigit() and height.isascii() and height.isdigit() and len(size) < 12:
            best = max(best, min(int(width), int(height)))
    return best or (180 if touch else 16)
