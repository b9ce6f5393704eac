"""Reads built once and sent to the driver: the same rows as SQLAlchemy's own execution, in the
session's transaction, with a statement compiled once per dialect however often it runs."""

from __future__ import annotations

from sqlalchemy import bindparam, select

from cardvault.domain import statements
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
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
