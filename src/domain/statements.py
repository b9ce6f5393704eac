"""The hot reads (a card, a page of cards, a page of the changes feed) run through the driver:
each statement is built once (so cached by identity), compiled once per dialect and then sent
as is, its values as the driver takes them and its rows as the driver gives them. SQLAlchemy's
per-execution cache lookup and row processing were 4% of a list request's CPU."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session


class _Prepared(NamedTuple):
    """A statement compiled for a dialect: its SQL, and for a positional paramstyle (SQLite's)
    the names of its parameters in order."""

    sql: str
    order: tuple[str, ...] | None
    fixed: dict[str, Any]  # values the statement carries itself (SQLite's OFFSET 0 after LIMIT)


@functools.lru_cache(maxsize=2048)
def _prepared(statement: Select[*tuple[Any, ...]], dialect: Dialect) -> _Prepared:
    compiled = statement.compile(dialect=dialect)
    order = tuple(compiled.positiontup or ()) if compiled.positional else None
    return _Prepared(str(compiled), order, {k: v for k, v in compiled.params.items() if v is not None})


def prepared_rows(
    session: Session, statement: Select[*tuple[Any, ...]], values: dict[str, Any]
) -> Sequence[Sequence[Any]]:
    """The rows of a statement built once, with these values, in the session's transaction."""
    connection = session.connection()
    prepared = _prepared(statement, connection.dialect)
    values = {**prepared.fixed, **values}
    parameters = values if prepared.order is None else tuple(values[name] for name in prepared.order)
    return connection.exec_driver_sql(prepared.sql, parameters).all()
