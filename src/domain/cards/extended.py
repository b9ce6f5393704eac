"""A card as the extended card shows it, read for many cards at once without the ORM (the
changes feed reads up to 200 a page: bench/bench_feed.py)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from cardvault.domain.cards.reading import gathered, unpack
from cardvault.domain.models import Card


class ExtendedView(NamedTuple):
    """A card as read for the extended card (the changes feed reads many at once): every
    column but the long texts the responses never show (``source_text``, ``captions_text``)
    and the upload's ETag, then its tags and folders."""

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


_EXTENDED_COLUMNS = [Card.__table__.c[name] for name in ExtendedView._fields[:-3]]
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
    # Built once, its ids a list bound at each execution: compiled once, not per length.
    return select(*_EXTENDED_COLUMNS, *gathered(dialect)).where(
        Card.account_id == bindparam("account_id"), Card.id.in_(bindparam("card_ids", expanding=True))
    )


def extended_views(session: Session, *, account_id: str, card_ids: list[str]) -> list[ExtendedView]:
    """The account's cards among these ids, read without the ORM (one statement, tags and
    folders gathered by the database)."""
    if not card_ids:
        return []
    query = _extended_query(session.get_bind().dialect.name)
    views = []
    for row in session.execute(query, {"account_id": account_id, "card_ids": card_ids}):
        *columns, tag_list, folder_list = row
        for flag in _EXTENDED_FLAGS:  # SQLite reads a boolean as 0 or 1
            columns[flag] = bool(columns[flag])
        for document in _EXTENDED_DOCUMENTS:  # JSON: parsed by psycopg, text from SQLite
            if isinstance(columns[document], str):
                columns[document] = orjson.loads(columns[document])
        views.append(ExtendedView._make((*columns, *unpack(tag_list, folder_list))))
    return views
