"""The ``linkMetadata`` stage's rules: a link card's page, fetched through the SSRF-safe fetcher,
read (cardvault.adapters.pages) and kept on the card.

Fetch failures are sorted into the stage's error codes: those no retry can help fail the stage
for good (``SOURCE_NOT_FOUND`` for 404 and 410, ``SOURCE_REFUSED`` for other 4xx answers, and
the fetcher's ``BAD_URL``, ``BLOCKED_ADDRESS``, ``TOO_MANY_REDIRECTS``, ``TOO_LARGE``); the others
are retried with backoff (``SOURCE_UNAVAILABLE`` for 408, 425, 429 and 5xx answers, and
``FETCH_TIMEOUT``, ``FETCH_FAILED``, ``DNS_FAILED``). A page that breaks the reader fails for
good (``PAGE_UNREADABLE``). The page's image is fetched the same way (``linkPreview``)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cardvault.adapters.fetcher import Fetched, Fetcher, FetchRefused
from cardvault.adapters.pages import Page, PageUnreadable, read_page
from cardvault.domain.annotations.placing import place_again
from cardvault.domain.models import Card
from cardvault.domain.pipeline.errors import StageFailed
from cardvault.domain.search.index import index_card

BASIS = ("url",)  # the card fields its result derives from
WRITES_TAGS = False
PAGE_BYTES = 5 * 1024 * 1024  # a page is read up to here (its head is at its start)
_TRANSIENT_FETCH = ("FETCH_TIMEOUT", "FETCH_FAILED", "DNS_FAILED")
_TRANSIENT_STATUS = (408, 425, 429)
HEADERS = {
    "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5",
    "User-Agent": "Mozilla/5.0 (compatible; CardVault/0.1; link previews)",
}


def fetch_page(fetcher: Fetcher, url: str) -> Page:
    """Fetch and read the page at ``url``; StageFailed when it cannot be had."""
    fetched = fetch(fetcher, url, max_bytes=PAGE_BYTES, truncate=True)
    try:
        return read_page(fetched.body, url=fetched.url, content_type=fetched.headers.get("content-type"))
    except PageUnreadable as exc:
        raise StageFailed("PAGE_UNREADABLE", f"{fetched.url} cannot be read: {exc}") from None


def fetch(
    fetcher: Fetcher, url: str, *, max_bytes: int, truncate: bool, headers: dict[str, str] | None = None
) -> Fetched:
    """Fetch ``url`` for a link stage; StageFailed with the code its failure is sorted into."""
    try:
        fetched = fetcher.fetch(url, headers=headers or HEADERS, max_bytes=max_bytes, truncate=truncate)
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


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Keep what the page says on its card (and in the search index: its title and
    description find the card)."""
    page = fields["page"]
    assert isinstance(page, Page)
    card.metadata_title = page.title
    card.metadata_description = page.description
    card.link_meta = page.stored()
    card.source_text = page.text
    place_again(session, card)
    session.flush()
    index_card(session, card)
