"""Ranking a search's matches by relevance when few match: each card's tier
(cardvault.domain.search.matching.TIERS) from its own index rows, the order made here."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Select, any_, bindparam, column, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from cardvault.domain.cards.reading import CardView, view_query, views
from cardvault.domain.models import Card
from cardvault.domain.search import matching
from cardvault.domain.search.query import Query

FEW = 200  # a relevance listing with at most this many matches is ranked in one read


def ranked_few(
    session: Session,
    first: Sequence[Sequence[Any]],
    values: dict[str, Any],
    query: Query,
    limit: int,
    position: list[int | str] | None,
) -> list[tuple[int, CardView]] | None:
    """The page by relevance when at most FEW cards match (None when more do). ``first`` is up
    to FEW + 1 matches (pk, moment) in list order (the plan a newest-first search has, driven by
    the rarest word's index entries) and ``values`` the listing's parameters; each card's tier
    comes from its own index rows, and the order is made here. The planner cannot be trusted to
    read a sparse tier from the index: estimating a word's cards poorly, it read a rare word's
    empty tiers by walking all of a million cards."""
    if len(first) > FEW:
        return None
    dialect = session.get_bind().dialect.name
    moments = {row[0]: row[1] for row in first}
    tiers = _tiers_of(session, dialect, matching.shape(query), values, list(moments))
    order = sorted(moments, key=lambda pk: (tiers[pk], moments[pk], pk), reverse=True)
    if position is not None:
        bound = tuple(position)
        order = [pk for pk in order if (tiers[pk], moments[pk], pk) < bound]
    chosen = order[: limit + 1]
    shown = {view.pk: view for view in views(session, _by_pks(dialect), {"pks": _pks_value(dialect, chosen)})}
    return [(tiers[pk], shown[pk]) for pk in chosen]


def _tiers_of(
    session: Session, dialect: str, query: matching.Shape, values: dict[str, Any], pks: list[int]
) -> dict[int, int]:
    """Each card's relevance tier (matching.TIERS), from its index rows: in which the groups are
    found (headline, or as whole words)."""
    among = {**values, "pks": _pks_value(dialect, pks)}
    connection = session.connection()

    def holding(name: str, headline: bool) -> set[int]:
        statement = text(matching.found_among(dialect, name, headline))
        return {row[0] for row in connection.execute(statement, among)}

    head = [holding(f"g{i}", headline=True) for i in range(query.groups)]
    whole = [holding(f"g{i}_w", headline=False) for i in range(query.groups)] if query.prefixed else []
    tiers = {}
    for pk in pks:
        in_head = sum(pk in found for found in head)
        where = 2 if in_head == query.groups else 1 if in_head else 0
        tiers[pk] = 2 * where + all(pk in found for found in whole)
    return tiers


@functools.cache
def _by_pks(dialect: str) -> Select[Any]:
    """The views of the cards whose pks are bound as ``pks`` (a list: _pks_value)."""
    if dialect == "sqlite":
        listed = text("SELECT value FROM json_each(:pks)").columns(column("value", BigInteger))
        return view_query(dialect).where(Card.pk.in_(listed))
    return view_query(dialect).where(Card.pk == any_(bindparam("pks", type_=ARRAY(BigInteger))))


def _pks_value(dialect: str, pks: list[int]) -> Any:
    return json.dumps(pks) if dialect == "sqlite" else pks
