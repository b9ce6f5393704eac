"""A link card's page: fetched through the SSRF-safe fetcher, read (cardvault.adapters.pages)
and kept on the card; and its image, fetched the same way.

Fetch failures are sorted into the stage's error codes: those no retry can help fail the stage
for good (``SOURCE_NOT_FOUND`` for 404 and 410, ``SOURCE_REFUSED`` for other 4xx answers, and
the fetcher's ``BAD_URL``, ``BLOCKED_ADDRESS``, ``TOO_MANY_REDIRECTS``, ``TOO_LARGE``); the others
are retried with backoff (``SOURCE_UNAVAILABLE`` for 408, 425, 429 and 5xx answers, and
``FETCH_TIMEOUT``, ``FETCH_FAILED``, ``DNS_FAILED``). A page that breaks the reader fails for
good (``PAGE_UNREADABLE``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from cardvault.adapters.fetcher import Fetched, Fetcher, FetchRefused
from cardvault.adapters.pages import Page, PageUnreadable, read_page
from cardvault.adapters.pages.categories import VERBS
from cardvault.domain.models import Card
from cardvault.domain.processing import StageFailed
from cardvault.domain.search.index import index_card

PAGE_BYTES = 5 * 1024 * 1024  # a page is read up to here (its head is at its start)
IMAGE_BYTES = 20 * 1024 * 1024  # a page's image over this is not fetched
_TRANSIENT_FETCH = ("FETCH_TIMEOUT", "FETCH_FAILED", "DNS_FAILED")
_TRANSIENT_STATUS = (408, 425, 429)
_HEADERS = {
    "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5",
    "User-Agent": "Mozilla/5.0 (compatible; CardVault/0.1; link previews)",
}


def fetch_page(fetcher: Fetcher, url: str) -> Page:
    """Fetch and read the page at ``url``; StageFailed when it cannot be had."""
    fetched = _fetch(fetcher, url, max_bytes=PAGE_BYTES, truncate=True)
    try:
        return read_page(fetched.body, url=fetched.url, content_type=fetched.headers.get("content-type"))
    except PageUnreadable as exc:
        raise StageFailed("PAGE_UNREADABLE", f"{fetched.url} cannot be read: {exc}") from None


def fetch_image(fetcher: Fetcher, url: str) -> bytes:
    """Fetch a page's image (its bytes are checked by the decoder, not trusted here)."""
    headers = {**_HEADERS, "Accept": "image/avif,image/webp,image/png,image/jpeg,image/*;q=0.8"}
    return _fetch(fetcher, url, max_bytes=IMAGE_BYTES, truncate=False, headers=headers).body


def _fetch(
    fetcher: Fetcher, url: str, *, max_bytes: int, truncate: bool, headers: dict[str, str] | None = None
) -> Fetched:
    try:
        fetched = fetcher.fetch(url, headers=headers or _HEADERS, max_bytes=max_bytes, truncate=truncate)
    except FetchRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.code in _TRANSIENT_FETCH) from None
    status = fetched.status
    if status in (404, 410):
        raise StageFailed("SOURCE_NOT_FOUND", f"{fetched.url} answered {status}.")
    if status >= 500 or status in _TRANSIENT_STATUS:
        raise StageFailed("SOURCE_UNAVAILABLE", f"{fetched.url} answered {status}.", transient=True)
    if not 200 <= status < 300:
        raise StageFailed("SOURCE_REFUSED", f"{fetched.url} answered {status}.")
    return fetched


def apply_page(session: Session, card: Card, page: Page) -> None:
    """Keep what the page says on its card (and in the search index: its title and
    description find the card)."""
    card.metadata_title = page.title
    card.metadata_description = page.description
    card.link_meta = page.stored()
    card.source_text = page.text
    session.flush()
    index_card(session, card)


def forget_page(card: Card) -> None:
    """Drop what the card's old page said (its URL changed): the stages read the new one. The
    caller indexes the card again."""
    card.metadata_title = card.metadata_description = card.source_text = None
    card.link_meta = None


def link_json(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The extended card's link fields from the card's ``link_meta`` (all null or empty until
    the page was read)."""
    meta = meta or {}
    price = meta.get("price")
    amount = None if price is None else {"amount": float(price["amount"]), "currency": price["currency"]}
    return {
        "linkPreviewTitle": meta.get("previewTitle"),
        "linkPreviewDescription": meta.get("previewDescription"),
        "linkFacts": meta.get("facts") or [],
        "linkPrice": amount,
        "linkFaviconUrl": meta.get("faviconUrl"),
        "linkSiteName": meta.get("siteName"),
        "linkAuthor": meta.get("author"),
        "linkPublisher": meta.get("publisher"),
        "linkPublishedAt": meta.get("publishedAt"),
        "linkPreviewMedia": meta.get("media") or [],
        "linkCanonicalUrl": meta.get("canonicalUrl"),
    }


def done_json(card_type: str, meta: dict[str, Any] | None, title: str | None) -> dict[str, Any]:
    """The fields only mark-done returns: the link's category and the verb it is done as."""
    category = (meta or {}).get("category") if card_type == "link" else None
    return {
        "linkCategory": category,
        "doneAs": VERBS.get(category or "other", "done"),
        "sourceTitle": title if meta else None,
        "sourceUrl": (meta or {}).get("canonicalUrl"),
    }
