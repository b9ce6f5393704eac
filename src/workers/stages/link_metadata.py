"""The ``linkMetadata`` stage of a link card: what the link's page says."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cardvault.adapters.pages import Page
from cardvault.domain import links
from cardvault.domain.models import Card
from cardvault.domain.processing import StageSkipped
from cardvault.workers.broker import fetcher, settings

BASIS = ("url",)
WRITES_TAGS = False


def run(card: Card, _lease: str) -> dict[str, object]:
    """What the link's page says."""
    assert card.url is not None
    if not settings().fetch_links:
        raise StageSkipped("FETCHING_OFF")
    return {"page": links.fetch_page(fetcher(), card.url)}


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Keep what the page says in the card."""
    page = fields["page"]
    assert isinstance(page, Page)
    links.apply_page(session, card, page)
