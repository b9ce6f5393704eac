"""A link card's page as the card shows it: its link fields and mark-done's, and forgetting an
old page when the URL changes. Fetching and reading the page are the pipeline's link stages
(cardvault.domain.pipeline.link_metadata and link_preview)."""

from __future__ import annotations

from typing import Any

from cardvault.adapters.pages.categories import VERBS
from cardvault.domain.models import Card


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
