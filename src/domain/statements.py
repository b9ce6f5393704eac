"""The hot reads (a card, a page of cards, a page of the changes feed) run through the driver:
each statement is built once (so cached by identity), compiled once per dialect and then sent
on the session's own DBAPI connection, in its transaction, its values as the driver takes them
and its rows as the driver gives them (tuples). SQLAlchemy's per-execution cache lookup, result
metadata and row objects were 4% of a list request's CPU and a tenth of a feed page's
(bench/bench_feed.py). A driver error is raised as SQLAlchemy raises it (DBAPIError, the
connection invalidated when it was lost), so callers and Database.transaction see no
difference. While anything listens to the engine's statements (a test counting them),
SQLAlchemy's execution sends them instead, so every listener sees every statement; with
tracing on they go through the driver still, each in a span of its own when its trace is kept
(sampled), in none when it is not."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

from opentelemetry.trace import SpanKind
from sqlalchemy import Connection, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.orm import Session

from cardvault.adapters import tracing


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
    connection = session.connection()  # begins the session's transaction, as any statement would
    prepared = _prepared(statement, connection.dialect)
    values = {**prepared.fixed, **values}
    parameters = values if prepared.order is None else tuple(values[name] for name in prepared.order)
    return driver_rows(connection, prepared.sql, parameters)


def driver_rows(connection: Connection, sql: str, parameters: Any) -> Sequence[Sequence[Any]]:
    """The rows of a statement that returns rows, as SQL text in the driver's paramstyle, sent
    on the connection's DBAPI connection in its transaction."""
    if tracing.on():  # a span of its own when its trace is kept, none (one check) when not
        if not tracing.recording():
            return _driver_rows(connection, sql, parameters)
        with tracing.span(
            sql.split(None, 1)[0],
            SpanKind.CLIENT,
            **{"db.statement": sql, "db.system": connection.dialect.name},
        ):
            return _driver_rows(connection, sql, parameters)
    if connection.dispatch.before_cursor_execute or connection.dispatch.after_cursor_execute:
        return connection.exec_driver_sql(sql, parameters).all()
    return _driver_rows(connection, sql, parameters)


def _driver_rows(connection: Connection, sql: str, parameters: Any) -> Sequence[Sequence[Any]]:
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql, parameters)
        rows: Sequence[Sequence[Any]] = cursor.fetchall()
    except connection.dialect.loaded_dbapi.Error as exc:
        raise _as_sqlalchemy_raises(connection, sql, parameters, exc, cursor) from exc
    finally:
        cursor.close()
    return rows


def _as_sqlalchemy_raises(
    connection: Connection, sql: str, parameters: Any, exc: Any, cursor: Any
) -> StatementError:
    """The error SQLAlchemy's own execution raises for a driver's error; a connection the error
    says is lost is invalidated first, so the pool never hands it out again."""
    dialect = connection.dialect
    lost = dialect.is_disconnect(exc, connection.connection.dbapi_connection, cursor)
    if lost:
        connection.invalidate(exc)
    error: StatementError = DBAPIError.instance(
        sql, parameters, exc, dialect.loaded_dbapi.Error, connection_invalidated=lost, dialect=dialect
    )
    return error
