"""Reads built once and sent to the driver: the same rows as SQLAlchemy's own execution, in the
session's transaction, with a statement compiled once per dialect however often it runs."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, event, select, text
from sqlalchemy.exc import DBAPIError

from cardvault.domain import statements
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.errors import ServiceUnavailable
from cardvault.domain.models import Card

# A keyset page: a bound LIMIT (SQLite compiles an OFFSET 0 of its own beside it).
_PAGE = (
    select(Card.id, Card.content)
    .where(Card.account_id == bindparam("account_id"), Card.pk > bindparam("after"))
    .order_by(Card.pk)
    .limit(bindparam("limit"))
)


def test_the_rows_are_sqlalchemys_and_the_statement_is_compiled_once(
    database: Database, account_id: str
) -> None:
    with database.transaction() as session:
        for n in range(5):
            editing.add_card(session, account_id=account_id, content=f"card {n}")
        # Not yet committed: read in the same transaction.
        before = statements._prepared.cache_info().misses
        for after, limit in ((0, 2), (0, 10), (0, 1)):
            values = {"account_id": account_id, "after": after, "limit": limit}
            ours = [tuple(row) for row in statements.prepared_rows(session, _PAGE, values)]
            theirs = [tuple(row) for row in session.execute(_PAGE, values)]
            assert ours == theirs
            assert len(ours) == min(limit, 5)
        assert statements._prepared.cache_info().misses - before <= 1  # once, by the first read
    with database.transaction(write=False) as session:
        values = {"account_id": "acc_nobody", "after": 0, "limit": 10}
        assert statements.prepared_rows(session, _PAGE, values) == []


def test_every_listener_to_the_engines_statements_sees_them(database: Database, account_id: str) -> None:
    sent: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(statement)

    values = {"account_id": account_id, "after": 0, "limit": 1}
    event.listen(database.engine, "before_cursor_execute", record)
    try:
        with database.transaction(write=False) as session:
            statements.prepared_rows(session, _PAGE, values)
    finally:
        event.remove(database.engine, "before_cursor_execute", record)
    assert [s for s in sent if "FROM cards" in s] == [
        statements._prepared(_PAGE, database.engine.dialect).sql
    ]


def test_a_driver_error_is_raised_as_sqlalchemy_raises_it(database: Database) -> None:
    values = {"account_id": object(), "after": 0, "limit": 1}  # no driver can send it
    with pytest.raises(DBAPIError) as raised, database.transaction(write=False) as session:
        statements.prepared_rows(session, _PAGE, values)
    assert isinstance(raised.value.orig, database.engine.dialect.loaded_dbapi.Error)
    assert not raised.value.connection_invalidated


def test_a_lost_connection_is_invalidated_and_the_read_answers_unavailable(
    database: Database, account_id: str
) -> None:
    if database.dialect != "postgresql":
        pytest.skip("connections that can be killed are PostgreSQL's")
    values = {"account_id": account_id, "after": 0, "limit": 1}
    raised: list[DBAPIError] = []
    with pytest.raises(ServiceUnavailable), database.transaction(write=False) as session:
        pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with database.engine.connect() as killer:
            assert killer.execute(text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid}).scalar_one()
        try:
            statements.prepared_rows(session, _PAGE, values)
        except DBAPIError as exc:
            raised.append(exc)
            raise
    assert [error.connection_invalidated for error in raised] == [True]
    with database.transaction(write=False) as session:  # the pool hands out a live connection
        assert statements.prepared_rows(session, _PAGE, values) == []
