"""Reading cards: one card or one page in a single statement, with each card's tags and folders
gathered by the database beside its row, without ORM objects (writers use cardvault.domain.cards.editing)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import Any, NamedTuple

import orjson
from sqlalchemy import BigInteger, Integer, Select, Text, bindparam, cast, func, select, tuple_
from sqlalchemy.orm import Session, aliased

from cardvault.domain import processing, search
from cardvault.domain.cards.urls import url_key
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import InvalidInput, NotFound
from cardvault.domain.models import Card, CardTag, FolderCard
from cardvault.domain.statements import prepared_rows
from cardvault.domain.tags.names import clean_tag, tag_key

TOTAL_CAP = 10_000  # a requested total is counted up to this many cards


class CardView(NamedTuple):
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
    file_object: str | None
    file_kind: str | None
    file_extension: str | None
    file_language: str | None
    file_width: int | None
    file_height: int | None
    file_preview: dict[str, Any] | None
    compact_object: str | None
    placeholder_object: str | None
    thumbnail_object: str | None
    thumbnail_overridden: bool
    screenshot_object: str | None
    screenshot_compact_object: str | None
    screenshot_placeholder_object: str | None
    metadata_title: str | None
    metadata_description: str | None
    link_meta: dict[str, Any] | None
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


# The card columns read, in CardView's order (its last three fields are gathered, not columns).
_COLUMNS = [Card.__table__.c[name] for name in CardView._fields[:-3]]


def aggregate(dialect: str, *values: Any) -> Any:
    """A JSON array of one array of values per row, built by the database, as text (parsed by
    ``unpack`` and the extended card's stages: orjson reads it faster than the driver's json module)."""
    if dialect == "sqlite":
        return func.json_group_array(func.json_array(*values))
    return cast(func.json_agg(func.json_build_array(*values)), Text)


def gathered(dialect: str) -> tuple[Any, Any]:
    """Columns of a card query that gather each card's tags and folders beside its row
    (``tag_list`` and ``folder_list``; ``unpack`` reads them)."""
    tags = (
        select(aggregate(dialect, CardTag.kind, CardTag.position, CardTag.name))
        .where(CardTag.card_pk == Card.pk)
        .correlate(Card)
        .scalar_subquery()
    )
    folders = (
        select(aggregate(dialect, FolderCard.added_at, FolderCard.folder_id))
        .where(FolderCard.card_pk == Card.pk)
        .correlate(Card)
        .scalar_subquery()
    )
    return tags.label("tag_list"), folders.label("folder_list")


def unpack(tag_list: str | None, folder_list: str | None) -> tuple[list[str], list[str], list[str]]:
    """A card's user tags, AI tags (each in order) and folder ids (in the order it was added
    to them) from what ``gathered`` read. Most cards have no folder and no AI tag: those cases
    cost no comprehension (each a call of its own before Python 3.12)."""
    user: list[str] = []
    ai: list[str] = []
    folders: list[str] = []
    if tag_list is not None and tag_list != "[]":
        tags = orjson.loads(tag_list)
        tags.sort()
        user = [name for kind, _, name in tags if kind == "user"]
        if len(user) < len(tags):
            ai = [name for kind, _, name in tags if kind == "ai"]
    if folder_list is not None and folder_list != "[]":
        added = orjson.loads(folder_list)
        added.sort()
        folders = [folder_id for _, folder_id in added]
    return user, ai, folders


@functools.cache
def _view_query(dialect: str) -> Select[Any]:
    return select(*_COLUMNS, *gathered(dialect))


_FLAGS = (CardView._fields.index("is_favorited"), CardView._fields.index("thumbnail_overridden"))
_DOCUMENTS = (CardView._fields.index("file_preview"), CardView._fields.index("link_meta"))


def as_psycopg_gives(columns: list[Any], flags: tuple[int, ...], documents: tuple[int, ...]) -> None:
    """Make a row's booleans (at ``flags``) and JSON documents (at ``documents``) what psycopg
    gives, in place: SQLite reads a boolean as 0 or 1 and JSON as text."""
    for flag in flags:
        columns[flag] = columns[flag] == 1
    for document in documents:
        if columns[document] is not None:
            columns[document] = orjson.loads(columns[document])


def _view(row: Any, sqlite: bool) -> CardView:
    *columns, tag_list, folder_list = row
    if sqlite:
        as_psycopg_gives(columns, _FLAGS, _DOCUMENTS)
    columns += unpack(tag_list, folder_list)
    return CardView._make(columns)


def _views(session: Session, statement: Select[Any], values: dict[str, Any]) -> list[CardView]:
    """Run a card-view statement built once through the driver and return its rows as views."""
    sqlite = session.get_bind().dialect.name == "sqlite"
    return [_view(row, sqlite) for row in prepared_rows(session, statement, values)]


@functools.cache
def _card_query(dialect: str) -> Select[Any]:
    # Built once, so _prepared compiles it once.
    return _view_query(dialect).where(
        Card.id == bindparam("card_id"), Card.account_id == bindparam("account_id")
    )


def get_card_view(session: Session, *, account_id: str, card_id: str) -> CardView:
    """Return the account's card, or raise NotFound (also for another account's card)."""
    query = _card_query(session.get_bind().dialect.name)
    found = _views(session, query, {"card_id": card_id, "account_id": account_id})
    if not found:
        raise NotFound("Card not found.")
    return found[0]


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
    processing_state: str | None = None  # the pipeline's state (cardvault.domain.processing)
    url: str | None = None  # cards whose url has this one's normal form (cardvault.domain.cards.urls)


@dataclasses.dataclass(frozen=True)
class CardPage:
    """One page of a listing; ``total`` only when asked for, counted up to TOTAL_CAP."""

    cards: list[CardView]
    next_cursor: str | None
    total: int | None = None
    total_capped: bool = False


Position = tuple[Any, Any]  # the columns a listing is ordered by: a moment, then a card pk


class _Shape(NamedTuple):
    """What a listing statement's SQL depends on; the values go in as parameters, so each shape
    is built and compiled once (building a statement per request, and SQLAlchemy's cache key
    for it, cost a fifteenth of a list request's CPU)."""

    dialect: str
    view: bool  # the cards' columns (a page), or their position only (a count)
    sort: str
    in_trash: bool
    archived: str
    folder: bool
    tag: bool
    card_type: bool
    favorited: bool | None
    created_after: bool
    created_before: bool
    words: int
    after: bool
    processing_state: str | None = None
    url: bool = False


@functools.lru_cache(maxsize=1024)
def _statement(shape: _Shape) -> Select[Any]:
    """The listing statement of a shape, in list order.

    A tag or folder filter joins the tag or folder rows, which carry their card's createdAt, and
    the list is ordered by those columns: the planner then reads the tag's or folder's cards in
    list order from its index and stops after a page. (Ordered by the card's own columns, it
    misjudged the join and fetched and sorted every card of the tag.) A card can carry a tag
    twice (as a tag and as an AI tag), so a tag filter can repeat it."""
    query = _view_query(shape.dialect) if shape.view else select(Card.pk)
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
    if shape.folder:
        # The folder's cards are all of its account's, so another account's folder finds none.
        rows = aliased(FolderCard)
        query = query.join(rows, (rows.card_pk == Card.pk) & (rows.folder_id == bindparam("folder")))
        position = position if shape.in_trash else (rows.card_created_at, rows.card_pk)
    if shape.tag:
        tags = aliased(CardTag)
        query = query.join(
            tags,
            (tags.card_pk == Card.pk)
            & (tags.account_id == bindparam("account_id"))
            & (tags.name_key == bindparam("tag_key")),
        )
        position = position if shape.in_trash else (tags.card_created_at, tags.card_pk)
    if shape.card_type:
        query = query.where(Card.type == bindparam("card_type"))
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
    if shape.words:
        query = query.where(search.matches(shape.dialect, shape.words))
    if shape.processing_state is not None:
        query = query.where(processing.in_state(shape.processing_state))
    if not shape.view:
        query = query.add_columns(*position)
    moment, pk = position
    newest = shape.sort == "newest"
    if shape.after:
        here, boundary = (
            tuple_(moment, pk),
            tuple_(bindparam("after_moment", type_=BigInteger), bindparam("after_pk", type_=BigInteger)),
        )
        query = query.where(here < boundary if newest else here > boundary)
    if newest:
        return query.order_by(moment.desc(), pk.desc())
    return query.order_by(moment.asc(), pk.asc())


@functools.lru_cache(maxsize=1024)
def _page_statement(shape: _Shape) -> Select[Any]:
    return _statement(shape).limit(bindparam("limit", type_=Integer))


@functools.lru_cache(maxsize=1024)
def _count_statement(shape: _Shape) -> Select[Any]:
    first = _statement(shape).distinct().limit(TOTAL_CAP + 1).subquery()
    return select(func.count()).select_from(first)


def _listing(
    dialect: str, account_id: str, filters: CardFilter, *, view: bool, after: list[int | str] | None = None
) -> tuple[Select[Any], dict[str, Any]]:
    """The statement of a listing and the values of its parameters."""
    words = search.query_words(filters.q or "")
    key = None if filters.url is None else url_key(filters.url)
    if filters.url is not None and key is None:
        problem = {"location": "query", "field": "url", "message": "is not an http or https URL with a host"}
        raise InvalidInput(
            "The url filter is not an http or https URL with a host.", details={"fields": [problem]}
        )
    shape = _Shape(
        dialect=dialect,
        view=view,
        sort=filters.sort,
        in_trash=filters.in_trash,
        archived=filters.archived,
        folder=filters.folder is not None,
        tag=filters.tag is not None,
        card_type=filters.card_type is not None,
        favorited=filters.favorited,
        created_after=filters.created_after is not None,
        created_before=filters.created_before is not None,
        words=len(words),
        after=after is not None,
        processing_state=filters.processing_state,
        url=key is not None,
    )
    values: dict[str, Any] = {
        "url_key": key,
        "account_id": account_id,
        "folder": filters.folder,
        "tag_key": tag_key(clean_tag(filters.tag)) if filters.tag is not None else None,
        "card_type": filters.card_type,
        "created_after": filters.created_after,
        "created_before": filters.created_before,
        **search.match_parameters(dialect, words),
    }
    if after is not None:
        values["after_moment"], values["after_pk"] = after
    return (_page_statement(shape) if view else _count_statement(shape)), values


def _scope(account_id: str, filters: CardFilter) -> str:
    """The query a cursor belongs to: the account, the sort and every filter."""
    described = json.dumps([account_id, dataclasses.asdict(filters)], sort_keys=True)
    return hashlib.sha256(described.encode()).hexdigest()


def count_cards(session: Session, *, account_id: str, filters: CardFilter) -> tuple[int, bool]:
    """Count the matching cards up to TOTAL_CAP, in list order (so the cost follows the page's
    plan, not a scan of the table); say whether there are more."""
    query, values = _listing(session.get_bind().dialect.name, account_id, filters, view=False)
    found = session.connection().execute(query, values).scalar() or 0
    return min(found, TOTAL_CAP), found > TOTAL_CAP


def list_query(
    session: Session, *, account_id: str, filters: CardFilter, after: list[int | str] | None = None
) -> tuple[Select[Any], dict[str, Any]]:
    """The statement reading a listing's cards in order (from just after the position
    ``after``) and its parameters, all but ``limit``."""
    return _listing(session.get_bind().dialect.name, account_id, filters, view=True, after=after)


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
    query, values = list_query(session, account_id=account_id, filters=filters, after=after)
    # A tag filter can repeat a card (once per kind of tag): read enough rows for limit + 1 cards.
    values["limit"] = (limit + 1) * (2 if filters.tag is not None else 1)
    views = list({view.pk: view for view in _views(session, query, values)}.values())[: limit + 1]
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
