"""cardvault.domain.cards.bulk: each item in its own savepoint, atomic all or none, and what the
caller's one transaction then commits."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from cardvault.domain.cards import bulk
from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidInput, NotApplied, NotFound
from cardvault.domain.models import Card


def _count(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        return int(
            session.scalar(select(func.count()).select_from(Card).where(Card.account_id == account_id)) or 0
        )


def test_a_failed_item_is_rolled_back_alone(database: Database, account_id: str) -> None:
    items = [{"content": "a"}, {"cardType": "audio"}, {"content": "c", "tags": ["t"]}]
    with database.transaction() as session:
        batch = bulk.apply(session, account_id=account_id, operation="create", items=items)
    assert batch.applied and [o.error is None for o in batch.outcomes] == [True, False, True]
    assert [o.written.stages for o in batch.outcomes if o.written] == [("ai",), ("ai",)]
    assert _count(database, account_id) == 2


def test_atomic_rolls_every_item_back_and_says_which_failed(database: Database, account_id: str) -> None:
    items = [{"content": "a"}, {"cardId": "crd_x"}]
    with database.transaction() as session:
        batch = bulk.apply(session, account_id=account_id, operation="create", items=items, atomic=True)
    assert not batch.applied
    first, second = batch.outcomes
    assert isinstance(first.error, NotApplied) and first.error.details == {"failedIndexes": [1]}
    assert isinstance(second.error, InvalidInput) and first.card_id is None
    assert _count(database, account_id) == 0


def test_a_missing_card_fails_its_item(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        batch = bulk.apply(session, account_id=account_id, operation="trash", items=[{"cardId": "crd_x"}])
    assert isinstance(batch.outcomes[0].error, NotFound) and batch.outcomes[0].card_id == "crd_x"


@pytest.mark.parametrize(("operation", "count"), [("nope", 1), ("create", 0), ("create", 101)])
def test_refuses_an_unknown_operation_and_item_counts_out_of_bounds(
    database: Database, account_id: str, operation: str, count: int
) -> None:
    with database.transaction() as session, pytest.raises(InvalidInput):
        bulk.apply(session, account_id=account_id, operation=operation, items=[{}] * count)
