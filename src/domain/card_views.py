"""Reading cards: one card or one page in a single statement, with each card's tags and folders
gathered by the database beside its row, without ORM objects (writers use cardvault.domain.cards)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from sqlalchemy import ColumnElement, Select, exists, func, select, tuple_
from sqlalchemy.orm import Session

from cardvault.domain import search
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import NotFound
from cardvault.domain.models import Card, CardTag, Folder, FolderCard
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
        .scalar_subquery()
    )
    folders = (
        select(_aggregate(dialect, FolderCard.added_at, FolderCard.folder_id))
        .where(FolderCard.card_pk == Card.pk)
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


def _conditions(dialect: str, account_id: str, filters: CardFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [
        Card.account_id == account_id,
        Card.deleted_at.is_not(None) if filters.in_trash else Card.deleted_at.is_(None),
    ]
    if filters.archived == "exclude":
        conditions.append(Card.archived_at.is_(None))
    elif filters.archived == "only":
        conditions.append(Card.archived_at.is_not(None))
    if filters.folder is not None:
        conditions.append(
            exists().where(
                FolderCard.card_pk == Card.pk,
                FolderCard.folder_id == Folder.id,
                Folder.id == filters.folder,
                Folder.account_id == account_id,
            )
        )
    if filters.card_type is not None:
        conditions.append(Card.type == filters.card_type)
    if filters.favorited is not None:
        conditions.append(Card.is_favorited.is_(filters.favorited))
    if filters.created_after is not None:
        conditions.append(Card.created_at > filters.created_after)
    if filters.created_before is not None:
        conditions.append(Card.created_at < filters.created_before)
    if filters.tag is not None:
        key = tag_key(clean_tag(filters.tag))
        conditions.append(
            exists().where(
                CardTag.account_id == account_id,
                CardTag.name_key == key,
                CardTag.card_pk == Card.pk,
            )
        )
    words = search.query_words(filters.q or "")
    if words:
        conditions.append(search.matches(dialect, words))
    return conditions


def _scope(account_id: str, filters: CardFilter) -> str:
    """The query a cursor belongs to: the account, the sort and every filter."""
    described = json.dumps([account_id, dataclasses.asdict(filters)], sort_keys=True)
    return hashlib.sha256(described.encode()).hexdigest()


def count_cards(session: Session, conditions: list[ColumnElement[bool]]) -> tuple[int, bool]:
    """Count the matching cards up to TOTAL_CAP; say whether there are more."""
    first = select(Card.pk).where(*conditions).limit(TOTAL_CAP + 1).subquery()
    found = session.scalar(select(func.count()).select_from(first)) or 0
    return min(found, TOTAL_CAP), found > TOTAL_CAP


def list_query(
    session: Session, *, account_id: str, filters: CardFilter, after: list[int | str] | None = None
) -> Select[Any]:
    """The statement reading a listing's cards in order, from just after the position ``after``."""
    dialect = session.get_bind().dialect.name
    # Trash is ordered by when cards went there; everything else by when they were created.
    moment = Card.deleted_at if filters.in_trash else Card.created_at
    newest = filters.sort == "newest"
    query = _view_query(dialect).where(*_conditions(dialect, account_id, filters))
    if after is not None:
        position, boundary = tuple_(moment, Card.pk), tuple_(*after)
        query = query.where(position < boundary if newest else position > boundary)
    if newest:
        return query.order_by(moment.desc(), Card.pk.desc())
    return query.order_by(moment.asc(), Card.pk.asc())


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
    views = [_view(row) for row in session.execute(query.limit(limit + 1))]
    next_cursor = None
    if len(views) > limit:
        views = views[:limit]
        last = views[-1]
        at = last.deleted_at if filters.in_trash else last.created_at
        next_cursor = encode_cursor(secret, scope=scope, position=[at or 0, last.pk])
    if not with_total:
        return CardPage(views, next_cursor)
    conditions = _conditions(session.get_bind().dialect.name, account_id, filters)
    total, capped = count_cards(session, conditions)
    return CardPage(views, next_cursor, total, capped)
