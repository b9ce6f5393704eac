"""Reading cards: one card or one page in a single statement, with each card's tags and folders
gathered by the database beside its row, without ORM objects (writers use cardvault.domain.cards)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from sqlalchemy import Select, func, select, tuple_
from sqlalchemy.orm import Session, aliased

from cardvault.domain import search
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import NotFound
from cardvault.domain.models import Card, CardTag, FolderCard
from cardvault.domain.tags import clean_tag, tag_key

TOTAL_CAP = 10_000  # a requested total is counted up to this many cards
_COLUMNS = list(Card.__table__.columns)


@dataclasses.dataclass(frozen=True, slots=True)
class CardView:
    """A card as read for a response: its columns (named as on Card), tags and folders."""

    pk: int
    id: str
    account_id: str
    type: str
    content: str
    notes: str | None
    url: str | None
    source: str | None
    file_name: str | None
    file_size: int | None
    mime_type: str | None
    metadata_title: str | None
    metadata_description: str | None
    ai_summary: str | None
    ai_transcript: str | None
    is_favorited: bool
    completed_at: int | None
    created_at: int
    updated_at: int
    deleted_at: int | None
    archived_at: int | None
    tags: list[str]
    ai_tags: list[str]
    folder_ids: list[str]


def _aggregate(dialect: str, *values: Any) -> Any:
    """A JSON array of one array of values per row, built by the database."""
    if dialect == "sqlite":
        return func.json_group_array(func.json_array(*values))
    return func.json_agg(func.json_build_array(*values))


def _view_query(dialect: str) -> Select[Any]:
    tags = (
        select(_aggregate(dialect, CardTag.kind, CardTag.position, CardTag.name))
        .where(CardTag.card_pk == Card.pk)
        .correlate(Card)
        .scalar_subquery()
    )
    folders = (
        select(_aggregate(dialect, FolderCard.added_at, FolderCard.folder_id))
        .where(FolderCard.card_pk == Card.pk)
        .correlate(Card)
        .scalar_subquery()
    )
    return select(*_COLUMNS, tags.label("tag_list"), folders.label("folder_list"))


def _loaded(value: Any) -> list[Any]:
    """The rows of an aggregate: parsed by the driver (PostgreSQL) or from text (SQLite)."""
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


def _view(row: Any) -> CardView:
    *columns, tag_list, folder_list = row
    tags = sorted(_loaded(tag_list))
    folders = sorted(_loaded(folder_list))
    return CardView(
        *columns,
        tags=[name for kind, _, name in tags if kind == "user"],
        ai_tags=[name for kind, _, name in tags if kind == "ai"],
        folder_ids=[folder_id for _, folder_id in folders],
    )


def get_card_view(session: Session, *, account_id: str, card_id: str) -> CardView:
    """Return the account's card, or raise NotFound (also for another account's card)."""
    dialect = session.get_bind().dialect.name
    query = _view_query(dialect).where(Card.id == card_id, Card.account_id == account_id)
    row = session.execute(query).first()
    if row is None:
        raise NotFound("Card not found.")
    return _view(row)


@dataclasses.dataclass(frozen=True)
class CardFilter:
    """What a listing asks for, apart from paging."""

    sort: str = "newest"
    card_type: str | None = None
    tag: str | None = None
    favorited: bool | None = None
    created_after: int | None = None
    created_before: int | None = None
    q: str | None = None
    archived: str = "exclude"  # exclude | include | only
    folder: str | None = None
    in_trash: bool = False


@dataclasses.dataclass(frozen=True)
class CardPage:
    """One page of a listing; ``total`` only when asked for, counted up to TOTAL_CAP."""

    cards: list[CardView]
    next_cursor: str | None
    total: int | None = None
    total_capped: bool = False


Position = tuple[Any, Any]  # the columns a listing is ordered by: a moment, then a card pk


def _filtered(
    query: Select[Any], dialect: str, account_id: str, filters: CardFilter
) -> tuple[Select[Any], Position]:
    """Narrow a statement over cards to the account's cards matching the filters; return it
    with the columns that put it in list order.

    A tag or folder filter joins the tag or folder rows, which carry their card's createdAt, and
    the list is ordered by those columns: the planner then reads the tag's or folder's cards in
    list order from its index and stops after a page. (Ordered by the card's own columns, it
    misjudged the join and fetched and sorted every card of the tag.) A card can carry a tag
    twice (as a tag and as an AI tag), so a tag filter can repeat it."""
    query = query.where(
        Card.account_id == account_id,
        Card.deleted_at.is_not(None) if filters.in_trash else Card.deleted_at.is_(None),
    )
    # Trash is ordered by when cards went there; everything else by when they were created.
    position: Position = (Card.deleted_at, Card.pk) if filters.in_trash else (Card.created_at, Card.pk)
    if filters.archived != "include":
        query = query.where(
            Card.archived_at.is_(None) if filters.archived == "exclude" else Card.archived_at.is_not(None)
        )
    if filters.folder is not None:
        # The folder's cards are all of its account's, so another account's folder finds none.
        rows = aliased(FolderCard)
        query = query.join(rows, (rows.card_pk == Card.pk) & (rows.folder_id == filters.folder))
        position = position if filters.in_trash else (rows.card_created_at, rows.card_pk)
    if filters.tag is not None:
        tags = aliased(CardTag)
        key = tag_key(clean_tag(filters.tag))
        query = query.join(
            tags, (tags.card_pk == Card.pk) & (tags.account_id == account_id) & (tags.name_key == key)
        )
        position = position if filters.in_trash else (tags.card_created_at, tags.card_pk)
    if filters.card_type is not None:
        query = query.where(Card.type == filters.card_type)
    if filters.favorited is not None:
        query = query.where(Card.is_favorited.is_(filters.favorited))
    if filters.created_after is not None:
        query = query.where(Card.created_at > filters.created_after)
    if filters.created_before is not None:
        query = query.where(Card.created_at < filters.created_before)
    words = search.query_words(filters.q or "")
    if words:
        query = query.where(search.matches(dialect, words))
    return query, position


def _ordered(
    query: Select[Any], position: Position, filters: CardFilter, after: list[int | str] | None = None
) -> Select[Any]:
    """Put a statement in list order by ``position``, from just after the position ``after``."""
    moment, pk = position
    newest = filters.sort == "newest"
    if after is not None:
        here, boundary = tuple_(moment, pk), tuple_(*after)
        query = query.where(here < boundary if newest else here > boundary)
    if newest:
        return query.order_by(moment.desc(), pk.desc())
    return query.order_by(moment.asc(), pk.asc())


def _scope(account_id: str, filters: CardFilter) -> str:
    """The query a cursor belongs to: the account, the sort and every filter."""
    described = json.dumps([account_id, dataclasses.asdict(filters)], sort_keys=True)
    return hashlib.sha256(described.encode()).hexdigest()


def count_cards(session: Session, *, account_id: str, filters: CardFilter) -> tuple[int, bool]:
    """Count the matching cards up to TOTAL_CAP, in list order (so the cost follows the page's
    plan, not a scan of the table); say whether there are more."""
    dialect = session.get_bind().dialect.name
    query, position = _filtered(select(Card.pk), dialect, account_id, filters)
    cards = _ordered(query.add_columns(*position), position, filters)
    first = cards.distinct().limit(TOTAL_CAP + 1).subquery()
    found = session.scalar(select(func.count()).select_from(first)) or 0
    return min(found, TOTAL_CAP), found > TOTAL_CAP


def list_query(
    session: Session, *, account_id: str, filters: CardFilter, after: list[int | str] | None = None
) -> Select[Any]:
    """The statement reading a listing's cards in order, from just after the position ``after``."""
    dialect = session.get_bind().dialect.name
    query, position = _filtered(_view_query(dialect), dialect, account_id, filters)
    return _ordered(query, position, filters, after)


def list_cards(
    session: Session,
    *,
    account_id: str,
    secret: str,
    filters: CardFilter,
    limit: int = 50,
    cursor: str | None = None,
    with_total: bool = False,
) -> CardPage:
    """Return one page of the account's cards matching the filters, in the chosen order, and
    with ``with_total`` how many match (in the same snapshot, when the session has one)."""
    scope = _scope(account_id, filters)
    after = None if cursor is None else decode_cursor(secret, cursor, scope=scope, size=2)
    query = list_query(session, account_id=account_id, filters=filters, after=after)
    # A tag filter can repeat a card (once per kind of tag): read enough rows for limit + 1 cards.
    rows = session.execute(query.limit((limit + 1) * (2 if filters.tag is not None else 1)))
    views = list({view.pk: view for view in map(_view, rows)}.values())[: limit + 1]
    next_cursor = None
    if len(views) > limit:
        views = views[:limit]
        last = views[-1]
        at = last.deleted_at if filters.in_trash else last.created_at
        next_cursor = encode_cursor(secret, scope=scope, position=[at or 0, last.pk])
    if not with_total:
        return CardPage(views, next_cursor)
    total, capped = count_cards(session, account_id=account_id, filters=filters)
    return CardPage(views, next_cursor, total, capped)
