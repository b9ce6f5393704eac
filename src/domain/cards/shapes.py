"""The SQL of a card listing, built once per shape: what the statement depends on (filters,
order, search, tier), its values going in as parameters."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from sqlalchemy import BigInteger, BindParameter, Integer, Select, bindparam, func, select, tuple_
from sqlalchemy.orm import aliased

from cardvault.domain.cards.reading import view_query
from cardvault.domain.models import Card, CardTag, FolderCard
from cardvault.domain.models.pipeline import in_state
from cardvault.domain.search import matching
from cardvault.domain.search.query import Query

TOTAL_CAP = 10_000  # a requested total is counted up to this many cards
NO_SEARCH = matching.shape(Query())


Position = tuple[Any, Any]  # the columns a listing is ordered by: a moment, then a card pk


class Shape(NamedTuple):
    """What a listing statement's SQL depends on; the values go in as parameters, so each shape
    is built and compiled once (building a statement per request, and SQLAlchemy's cache key
    for it, cost a fifteenth of a list request's CPU)."""

    dialect: str
    view: bool  # the cards' columns (a page), or their position only (a count)
    sort: str
    in_trash: bool
    archived: str
    folder: int  # how many folders the card may be in (any of them)
    tag: bool
    card_type: int  # how many types the card may be of (any of them)
    favorited: bool | None
    created_after: bool
    created_before: bool
    search: matching.Shape
    after: bool
    processing_state: str | None = None
    url: bool = False
    tier: int | None = None  # a relevance tier (cardvault.domain.search.matching.TIERS)
    probed: bool = False  # SQLite: the search's one term tested card by card (matching._found)


@functools.lru_cache(maxsize=1024)
def statement(shape: Shape) -> Select[Any]:
    """The listing statement of a shape, in list order.

    A tag or folder filter joins the tag or folder rows, which carry their card's createdAt, and
    the list is ordered by those columns: the planner then reads the tag's or folder's cards in
    list order from its index and stops after a page. (Ordered by the card's own columns, it
    misjudged the join and fetched and sorted every card of the tag.) A card can carry a tag
    twice (as a tag and as an AI tag), so a tag filter can repeat it."""
    query = view_query(shape.dialect) if shape.view else select(Card.pk)
    query = query.where(
        Card.account_id == bindparam("account_id"),
        Card.deleted_at.is_not(None) if shape.in_trash else Card.deleted_at.is_(None),
    )
    # Trash is ordered by when cards went there; everything else by when they were created.
    position: Position = (Card.deleted_at, Card.pk) if shape.in_trash else (Card.created_at, Card.pk)
    if shape.archived != "include":
        query = query.where(
            Card.archived_at.is_(None) if shape.archived == "exclude" else Card.archived_at.is_not(None)
        )
    # A folder's cards are all of its account's, so another account's folder finds none.
    if shape.folder == 1:
        rows = aliased(FolderCard)
        query = query.join(rows, (rows.card_pk == Card.pk) & (rows.folder_id == bindparam("folder0")))
        position = position if shape.in_trash else (rows.card_created_at, rows.card_pk)
    elif shape.folder > 1:  # any of them: a card in two is listed once, in its own order
        held = select(FolderCard.card_pk).where(FolderCard.folder_id.in_(_bound("folder", shape.folder)))
        query = query.where(Card.pk.in_(held))
    if shape.tag:
        tags = aliased(CardTag)
        query = query.join(
            tags,
            (tags.card_pk == Card.pk)
            & (tags.account_id == bindparam("account_id"))
            & (tags.name_key == bindparam("tag_key")),
        )
        position = position if shape.in_trash else (tags.card_created_at, tags.card_pk)
    if shape.card_type == 1:
        query = query.where(Card.type == bindparam("card_type0"))
    elif shape.card_type > 1:
        query = query.where(Card.type.in_(_bound("card_type", shape.card_type)))
    if shape.url:
        query = query.where(Card.url_key == bindparam("url_key"))
    if shape.favorited is not None:
        query = query.where(Card.is_favorited.is_(shape.favorited))
    # On the ordering column (the same value where a tag or folder row carries it), so the
    # bounds narrow the index range the page is read from.
    created = Card.created_at if shape.in_trash else position[0]
    if shape.created_after:
        query = query.where(created > bindparam("created_after"))
    if shape.created_before:
        query = query.where(created < bindparam("created_before"))
    if shape.search != NO_SEARCH:
        query = query.where(matching.condition(shape.dialect, shape.search, shape.tier, probed=shape.probed))
    if shape.processing_state is not None:
        query = query.where(in_state(shape.processing_state))
    if not shape.view:
        query = query.add_columns(*position)
    moment, pk = position
    newest = shape.sort != "oldest"  # relevance reads each tier newest first
    if shape.after:
        here, boundary = (
            tuple_(moment, pk),
            tuple_(bindparam("after_moment", type_=BigInteger), bindparam("after_pk", type_=BigInteger)),
        )
        query = query.where(here < boundary if newest else here > boundary)
    if newest:
        return query.order_by(moment.desc(), pk.desc())
    return query.order_by(moment.asc(), pk.asc())


def _bound(name: str, count: int) -> list[BindParameter[Any]]:
    """``count`` parameters named ``name0``, ``name1``, ...: one value each, in one shape."""
    return [bindparam(f"{name}{i}") for i in range(count)]


@functools.lru_cache(maxsize=1024)
def page_statement(shape: Shape) -> Select[Any]:
    """A page of a listing: ``limit`` cards' views, in list order.

    SQLite with a search: the page's cards are chosen first and only theirs are read (it
    computes a view's columns, tags and folders included, for every match before sorting them:
    a word 10,000 cards hold cost 82 ms a page at 100,000 cards)."""
    limit = bindparam("limit", type_=Integer)
    if shape.dialect != "sqlite" or shape.search == NO_SEARCH:
        return statement(shape).limit(limit)
    chosen = statement(shape._replace(view=False)).limit(limit).subquery()
    moment = Card.deleted_at if shape.in_trash else Card.created_at
    page = view_query(shape.dialect).where(Card.pk.in_(select(chosen.c.pk)))
    if shape.sort == "oldest":
        return page.order_by(moment.asc(), Card.pk.asc())
    return page.order_by(moment.desc(), Card.pk.desc())


@functools.lru_cache(maxsize=1024)
def first_statement(shape: Shape, cap: int) -> Select[Any]:
    """The first ``cap`` matches in list order, each once (pk first)."""
    return statement(shape).distinct().limit(cap)


@functools.lru_cache(maxsize=1024)
def count_statement(shape: Shape) -> Select[Any]:
    return select(func.count()).select_from(first_statement(shape, TOTAL_CAP + 1).subquery())
