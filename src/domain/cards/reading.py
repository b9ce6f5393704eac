"""Reading cards: one card, or the cards of a statement (cardvault.domain.cards.listing builds
a page's), in a single statement, with each card's tags and folders gathered by the database
beside its row, without ORM objects (writers use cardvault.domain.cards.editing)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Select, Text, bindparam, cast, func, select
from sqlalchemy.orm import Session

from cardvault.domain.errors import NotFound
from cardvault.domain.models import Card, CardTag, FolderCard
from cardvault.domain.statements import prepared_rows


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
    file_text: str | None
    is_favorited: bool
    completed_at: int | None
    created_at: int
    updated_at: int
    deleted_at: int | None
    archived_at: int | None
    annotation_count: int
    version: int  # cardvault.domain.versions: the card's ETag
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


def view_columns(dialect: str) -> list[Any]:
    """What a card view reads (VIEW_WIDTH columns): its columns, then its tags and folders
    gathered."""
    return [*_COLUMNS, *gathered(dialect)]


VIEW_WIDTH = len(_COLUMNS) + 2


@functools.cache
def view_query(dialect: str) -> Select[Any]:
    return select(*view_columns(dialect))


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


def card_view(row: Any, sqlite: bool) -> CardView:
    """The card view of what ``view_columns`` read (a row, or its first columns)."""
    *columns, tag_list, folder_list = row
    if sqlite:
        as_psycopg_gives(columns, _FLAGS, _DOCUMENTS)
    columns += unpack(tag_list, folder_list)
    return CardView._make(columns)


def views(session: Session, statement: Select[Any], values: dict[str, Any]) -> list[CardView]:
    """Run a card-view statement built once through the driver and return its rows as views."""
    sqlite = session.get_bind().dialect.name == "sqlite"
    return [card_view(row, sqlite) for row in prepared_rows(session, statement, values)]


@functools.cache
def _card_query(dialect: str) -> Select[Any]:
    # Built once, so _prepared compiles it once.
    return view_query(dialect).where(
        Card.id == bindparam("card_id"), Card.account_id == bindparam("account_id")
    )


def get_card_view(session: Session, *, account_id: str, card_id: str) -> CardView:
    """Return the account's card, or raise NotFound (also for another account's card)."""
    query = _card_query(session.get_bind().dialect.name)
    found = views(session, query, {"card_id": card_id, "account_id": account_id})
    if not found:
        raise NotFound("Card not found.")
    return found[0]
