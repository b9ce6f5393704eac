"""A card as the extended card shows it, read for many cards at once without the ORM, its tags,
folders and processing stages gathered in the same statement (the changes feed reads up to 200
a page: bench/bench_feed.py)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import orjson
from sqlalchemy import ARRAY, Select, String, any_, bindparam, func, literal_column, select
from sqlalchemy.orm import Session

from cardvault.domain.cards.reading import aggregate, as_psycopg_gives, gathered, unpack
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline.status import STAGE_COLUMNS, StageView
from cardvault.domain.statements import prepared_rows


class ExtendedView(NamedTuple):
    """A card as read for the extended card (the changes feed reads many at once): every
    column but the long texts the responses never show (``source_text``, ``captions_text``)
    and the upload's ETag, then its tags, folders and processing stages."""

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
    metadata_title: str | None
    metadata_description: str | None
    link_meta: dict[str, Any] | None
    ai_summary: str | None
    ai_transcript: str | None
    transcript_source: str | None
    ai_engine: dict[str, Any] | None
    colors: list[str] | None
    duration_ms: int | None
    waveform: dict[str, Any] | None
    scrub: dict[str, Any] | None
    scrub_object: str | None
    captions_object: str | None
    captions: dict[str, Any] | None
    screenshot_object: str | None
    screenshot_compact_object: str | None
    screenshot_placeholder_object: str | None
    archive_object: str | None
    reader_object: str | None
    capture: dict[str, Any] | None
    is_favorited: bool
    completed_at: int | None
    created_at: int
    updated_at: int
    deleted_at: int | None
    archived_at: int | None
    tags: list[str]
    ai_tags: list[str]
    folder_ids: list[str]
    stages: list[StageView]


_EXTENDED_COLUMNS = [Card.__table__.c[name] for name in ExtendedView._fields[:-4]]
_EXTENDED_FLAGS = tuple(ExtendedView._fields.index(name) for name in ("is_favorited", "thumbnail_overridden"))
_EXTENDED_DOCUMENTS = tuple(
    ExtendedView._fields.index(name)
    for name in (
        "file_preview",
        "link_meta",
        "ai_engine",
        "colors",
        "waveform",
        "scrub",
        "captions",
        "capture",
    )
)


@functools.cache
def _extended_query(dialect: str) -> Select[Any]:
    # Built once, so compiled once: its ids one value (an array on PostgreSQL, a JSON array on
    # SQLite), whatever their number.
    stages = (
        select(aggregate(dialect, *STAGE_COLUMNS))
        .where(CardStage.card_pk == Card.pk)
        .correlate(Card)
        .scalar_subquery()
    )
    if dialect == "postgresql":
        among = Card.id == any_(bindparam("card_ids", type_=ARRAY(String)))
    else:
        among = Card.id.in_(
            select(literal_column("value")).select_from(func.json_each(bindparam("card_ids")))
        )
    return select(*_EXTENDED_COLUMNS, *gathered(dialect), stages.label("stage_list")).where(
        Card.account_id == bindparam("account_id"), among
    )


def extended_views(session: Session, *, account_id: str, card_ids: list[str]) -> list[ExtendedView]:
    """The account's cards among these ids (one statement)."""
    if not card_ids:
        return []
    dialect = session.get_bind().dialect.name
    sqlite = dialect == "sqlite"
    ids: list[str] | str = orjson.dumps(card_ids).decode() if sqlite else card_ids
    views = []
    for row in prepared_rows(session, _extended_query(dialect), {"account_id": account_id, "card_ids": ids}):
        *columns, tag_list, folder_list, stage_list = row
        if sqlite:
            as_psycopg_gives(columns, _EXTENDED_FLAGS, _EXTENDED_DOCUMENTS)
        columns += unpack(tag_list, folder_list)
        columns.append(_stages(stage_list))
        views.append(ExtendedView._make(columns))
    return views


def _stages(stage_list: str | None) -> list[StageView]:
    if stage_list is None or stage_list == "[]":
        return []
    return [StageView._make(stage) for stage in orjson.loads(stage_list)]
