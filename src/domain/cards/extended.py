"""A card as the extended card shows it, read for many cards at once without the ORM, its tags,
folders and processing stages gathered in the same statement (the changes feed reads up to 200
a page: bench/bench_feed.py)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import orjson
from sqlalchemy import ARRAY, Select, String, any_, bindparam, func, literal_column, select
from sqlalchemy.orm import Session

from cardvault.domain.cards.reading import (
    VIEW_WIDTH,
    CardView,
    aggregate,
    as_psycopg_gives,
    card_view,
    view_columns,
)
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline.status import STAGE_COLUMNS, StageView
from cardvault.domain.statements import prepared_rows


class ExtendedView(NamedTuple):
    """A card as read for the extended card (the changes feed reads many at once): its card
    view, then every other column but the long texts the responses never show (``source_text``,
    ``captions_text``) and the upload's ETag, then its processing stages."""

    card: CardView
    transcript_source: str | None
    ai_engine: dict[str, Any] | None
    ocr_facts: dict[str, Any] | None
    colors: list[str] | None
    duration_ms: int | None
    waveform: dict[str, Any] | None
    scrub: dict[str, Any] | None
    scrub_object: str | None
    captions_object: str | None
    captions: dict[str, Any] | None
    archive_object: str | None
    reader_object: str | None
    capture: dict[str, Any] | None
    stages: list[StageView]


# The columns read beside the card view's, in ExtendedView's order, and which of them are JSON
# documents (SQLite reads them as text).
_MORE = ExtendedView._fields[1:-1]
_MORE_DOCUMENTS = tuple(
    _MORE.index(name)
    for name in ("ai_engine", "ocr_facts", "colors", "waveform", "scrub", "captions", "capture")
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
    more = [Card.__table__.c[name] for name in _MORE]
    return select(*view_columns(dialect), *more, stages.label("stage_list")).where(
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
        *more, stage_list = row[VIEW_WIDTH:]
        if sqlite:
            as_psycopg_gives(more, (), _MORE_DOCUMENTS)
        views.append(ExtendedView._make([card_view(row[:VIEW_WIDTH], sqlite), *more, _stages(stage_list)]))
    return views


def _stages(stage_list: str | None) -> list[StageView]:
    if stage_list is None or stage_list == "[]":
        return []
    return [StageView._make(stage) for stage in orjson.loads(stage_list)]
