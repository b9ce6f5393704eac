"""Facets of a listing: of the cards it matches (the first TOTAL_CAP in list order, as its
total counts them), how many are of each type, and how many carry each of the 20 tags that
most of them carry."""

from __future__ import annotations

import dataclasses

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cardvault.domain.cards import listing
from cardvault.domain.models import Card, CardTag
from cardvault.domain.tags.operations import display_names

TOP_TAGS = 20


@dataclasses.dataclass(frozen=True)
class Facets:
    types: list[tuple[str, int]]  # most cards first, then by type
    tags: list[tuple[str, int]]  # (the tag as the tag list spells it, cards), most first, then by key
    capped: bool  # more than TOTAL_CAP cards match: the counts are of the first TOTAL_CAP


def facets(session: Session, *, account_id: str, filters: listing.CardFilter) -> Facets:
    """Count the listing's matching cards by type and by tag (a user's tag; AI tags aside)."""
    statement, values = listing.first_matches(session, account_id, filters)
    first = statement.subquery()
    connection = session.connection()
    count = func.count()
    types = connection.execute(
        select(Card.type, count)
        .join(first, Card.pk == first.c.pk)
        .group_by(Card.type)
        .order_by(count.desc(), Card.type),
        values,
    ).all()
    counted = func.count(CardTag.card_pk.distinct())
    tags = connection.execute(
        select(CardTag.name_key, counted)
        .join(first, CardTag.card_pk == first.c.pk)
        .where(CardTag.kind == "user")
        .group_by(CardTag.name_key)
        .order_by(counted.desc(), CardTag.name_key)
        .limit(TOP_TAGS),
        values,
    ).all()
    names = display_names(session, account_id, [key for key, _ in tags])
    _, capped = listing.count_cards(session, account_id=account_id, filters=filters)
    return Facets(
        [(card_type, n) for card_type, n in types],
        [(names.get(key, key), n) for key, n in tags],
        capped,
    )
