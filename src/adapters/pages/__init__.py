"""What a link's page says: its title, description, site, author, dates, image, facts, price
and category, read from the fetched bytes with no network (extruct for JSON-LD, microdata and
Open Graph; selectolax for the head's links and meta tags; trafilatura for what the markup does
not state). Each field takes the first source that has it, in the order of PRECEDENCE, which
the spec repeats.

A page that is not HTML (a PDF, an image, anything else) still gets a title (its file name), a
category and, for an image, the image itself as the preview.

This module reads a page from its parts: encodings (its bytes as text), head (meta tags and
links), schema_org (its items and what they say), open_graph (its preview media), main_text
(trafilatura), categories (the vocabulary) and values (text, URLs and dates as a card shows
them)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlsplit

from cardvault.adapters.pages.categories import page_category, site_category
from cardvault.adapters.pages.encodings import decode_page, looks_like_html
from cardvault.adapters.pages.head import Head, head_of
from cardvault.adapters.pages.main_text import TEXT_CHARS, extract
from cardvault.adapters.pages.open_graph import medium, preview_media
from cardvault.adapters.pages.schema_org import (
    author_of,
    facts_of,
    image_of,
    main_first,
    name_of,
    price_of,
    schema_items,
)
from cardvault.adapters.pages.values import absolute_url, clean_text, first_of, host_of, iso_date

# Each field's sources, first wins (documented in the spec's LinkMetadata description).
PRECEDENCE = {
    "title": ("og:title", "twitter:title", "JSON-LD name or headline", "<title>", "trafilatura"),
    "description": ("og:description", "twitter:description", "meta description", "trafilatura"),
    "siteName": ("og:site_name", "JSON-LD publisher name", "host name"),
    "author": ("JSON-LD author", "meta author", "article:author", "trafilatura"),
    "publisher": ("JSON-LD publisher name", "og:site_name"),
    "publishedAt": ("JSON-LD datePublished", "article:published_time", "trafilatura"),
    "canonicalUrl": ('<link rel="canonical">', "og:url", "the address after redirects"),
    "category": ("JSON-LD @type", "og:type", "the site", "the content type"),
}

TEXT_KEEP = 20_000  # of its main text, the part kept (the AI stage's input)
PAGE_CHARS = 2 * 1024 * 1024  # the part of a page its schema.org items are read from
MAX_MEDIA = 8
MAX_FACTS = 12


@dataclasses.dataclass(frozen=True)
class Page:
    """What a page says; every field None (or empty) when it does not say."""

    url: str  # where it was read from, after redirects
    content_type: str | None
    title: str | None = None
    description: str | None = None
    preview_title: str | None = None
    preview_description: str | None = None
    site_name: str | None = None
    author: str | None = None
    publisher: str | None = None
    published_at: str | None = None
    canonical_url: str | None = None
    favicon_url: str | None = None
    image_url: str | None = None
    category: str = "other"
    facts: tuple[tuple[str, str], ...] = ()
    price: tuple[Decimal, str] | None = None
    media: tuple[dict[str, Any], ...] = ()
    text: str | None = None  # the page's main text (at most TEXT_KEEP characters)

    def stored(self) -> dict[str, Any]:
        """The card's ``link_meta`` document (the title and description go to their columns)."""
        return {
            "url": self.url,
            "contentType": self.content_type,
            "previewTitle": self.preview_title,
            "previewDescription": self.preview_description,
            "siteName": self.site_name,
            "author": self.author,
            "publisher": self.publisher,
            "publishedAt": self.published_at,
            "canonicalUrl": self.canonical_url,
            "faviconUrl": self.favicon_url,
            "imageUrl": self.image_url,
            "category": self.category,
            "facts": [{"label": label, "value": value} for label, value in self.facts],
            "price": None
            if self.price is None
            else {"amount": str(self.price[0]), "currency": self.price[1]},
            "media": list(self.media),
        }


class PageUnreadable(Exception):
    """The page broke the reader in a way it does not foresee (it is read as nothing)."""


def read_page(body: bytes, *, url: str, content_type: str | None) -> Page:
    """Read a fetched page (``url`` is where it came from, after redirects); PageUnreadable
    when something in it breaks the reader."""
    mime = (content_type or "").split(";")[0].strip().lower() or None
    try:
        if mime in ("text/html", "application/xhtml+xml") or (mime is None and looks_like_html(body)):
            return _read_html(decode_page(body, content_type), url=url, content_type=mime or "text/html")
        return _read_file(url=url, content_type=mime)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise PageUnreadable(f"{type(exc).__name__}: {exc}") from None


def _read_file(*, url: str, content_type: str | None) -> Page:
    """A page that is a file: named by its path, an image its own preview."""
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or urlsplit(url).hostname or url
    is_image = content_type is not None and content_type.startswith("image/")
    category = "document" if content_type in ("application/pdf", "application/epub+zip") else None
    return Page(
        url=url,
        content_type=content_type,
        title=clean_text(name),
        site_name=host_of(url),
        canonical_url=url,
        image_url=url if is_image else None,
        category=category or site_category(url) or "other",
        media=(medium("image", url, content_type),) if is_image else (),
    )


def _read_html(html: str, *, url: str, content_type: str) -> Page:
    from extruct.utils import parse_html
    from selectolax.lexbor import LexborHTMLParser

    head = Head(LexborHTMLParser(head_of(html)), url)
    og = head.properties
    try:
        tree = parse_html(html[:PAGE_CHARS], encoding="utf-8")
    except Exception:  # (lxml finds no document in it: only the head's tags count)
        tree = None
    items = main_first(list(schema_items(tree, url))) if tree is not None else []
    # trafilatura changes the tree it reads, last: the page's own when it is short enough.
    extracted = extract(tree if tree is not None and len(html) <= TEXT_CHARS else html[:TEXT_CHARS], url)

    def og1(name: str) -> str | None:
        return clean_text(next(iter(og.get(name, ())), None))

    def schema(*fields: str) -> str | None:
        for item in items:
            for name in fields:
                found = name_of(item.get(name))
                if found:
                    return found
        return None

    publisher = first_of(name_of(item.get("publisher")) for item in items)
    canonical = absolute_url(head.canonical, url) or absolute_url(og1("og:url"), url) or url
    image = absolute_url(og1("og:image:secure_url") or og1("og:image"), url) or absolute_url(
        head.meta.get("twitter:image"), url
    )
    image = image or absolute_url(image_of(items), url) or absolute_url(extracted.get("image"), url)
    return Page(
        url=url,
        content_type=content_type,
        title=first_of(
            (og1("og:title"), clean_text(head.meta.get("twitter:title")), schema("headline", "name"))
        )
        or clean_text(head.title)
        or clean_text(extracted.get("title")),
        description=og1("og:description")
        or clean_text(head.meta.get("twitter:description"))
        or clean_text(head.meta.get("description"))
        or clean_text(extracted.get("description")),
        preview_title=og1("og:title") or clean_text(head.meta.get("twitter:title")),
        preview_description=og1("og:description") or clean_text(head.meta.get("twitter:description")),
        site_name=og1("og:site_name") or publisher or host_of(url),
        author=author_of(items)
        or clean_text(head.meta.get("author"))
        or _person(og1("article:author"))
        or clean_text(extracted.get("author")),
        publisher=publisher or og1("og:site_name"),
        published_at=first_of(
            iso_date(value)
            for value in (
                schema("datePublished", "uploadDate", "startDate"),
                og1("article:published_time"),
                extracted.get("date"),
            )
        ),
        canonical_url=canonical,
        favicon_url=head.favicon(),
        image_url=image,
        category=page_category(items, og1("og:type"), url),
        facts=tuple(facts_of(items))[:MAX_FACTS],
        price=price_of(items, og),
        media=tuple(preview_media(og, url))[:MAX_MEDIA],
        text=(extracted.get("text") or "").strip()[:TEXT_KEEP] or None,
    )


def _person(value: str | None) -> str | None:
    """article:author holds a name or a profile URL; only a name is an author."""
    return value if value and not value.startswith(("http://", "https://", "/")) else None
