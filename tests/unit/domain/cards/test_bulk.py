"""cardvault.domain.cards.bulk: each item in its own savepoint, atomic all or none, and what the
caller's one transaction then commits; creates and tags stored together (a few statements for a
hundred cards) with each item still answering as its single operation would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import event, func, select

from cardvault.domain.cards import bulk, editing
from cardvault.domain.db import Database
from cardvault.domain.errors import CardLimitReached, InvalidInput, NotApplied, NotFound
from cardvault.domain.models import Card
from cardvault.domain.tags.counts import card_tally


@contextmanager
def _statements(database: Database) -> Iterator[list[str]]:
    """The SQL statements the database is sent meanwhile."""
    sent: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(statement)

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        yield sent
    finally:
        event.remove(database.engine, "before_cursor_execute", count)


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


def test_a_hundred_creates_and_tags_are_stored_together(database: Database, account_id: str) -> None:
    """Set-based: the statements of a batch do not grow with its items (one by one, a create
    took 14 and a tag 18)."""
    items = [{"content": f"card {i}", "tags": ["bulk"]} for i in range(100)]
    with _statements(database) as sent, database.transaction() as session:
        made = bulk.apply(session, account_id=account_id, operation="create", items=items)
    assert all(o.error is None for o in made.outcomes)
    # SQLite's driver takes the cards' rows one INSERT each (in the process: no round trip).
    per_row = database.dialect == "sqlite"
    assert len([s for s in sent if not (per_row and s.startswith("INSERT INTO cards "))]) < 40
    tags = [{"cardId": o.card_id, "tags": ["later"]} for o in made.outcomes]
    with _statements(database) as sent, database.transaction() as session:
        tagged = bulk.apply(session, account_id=account_id, operation="tag", items=tags)
    assert all(o.error is None for o in tagged.outcomes) and len(sent) < 40
    with database.transaction(write=False) as session:
        cards = session.scalars(select(Card).where(Card.account_id == account_id)).all()
        assert {tuple(card.tags) for card in cards} == {("bulk", "later")}
        assert all(card.search_words > 0 for card in cards)


def test_a_tag_batch_answers_each_item_as_its_single_operation(
    database: Database, account_id: str, new_account: Callable[[], str]
) -> None:
    """The same card twice (the second sees the first), another account's card and a missing
    one (NotFound), an item past the tag cap and one with a field tag does not take: each
    fails alone and changes nothing; the counts follow what was stored."""
    other_account_id = new_account()
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="c", tags=["a"]).card.id
        full = editing.add_card(
            session, account_id=account_id, content="f", tags=[f"t{i}" for i in range(100)]
        )
        foreign = editing.add_card(session, account_id=other_account_id, content="o").card.id
    items = [
        {"cardId": card, "tags": ["b"]},
        {"cardId": card, "tags": ["c", "A"]},
        {"cardId": foreign, "tags": ["x"]},
        {"cardId": "crd_missing", "tags": ["x"]},
        {"cardId": full.card.id, "tags": ["one-more"]},
        {"cardId": card, "tags": ["d"], "notes": "not taken"},
    ]
    with database.transaction() as session:
        batch = bulk.apply(session, account_id=account_id, operation="tag", items=items)
    errors = [type(o.error) if o.error else None for o in batch.outcomes]
    assert errors == [None, None, NotFound, NotFound, InvalidInput, InvalidInput]
    assert str(batch.outcomes[2].error) == str(batch.outcomes[3].error)
    with database.transaction(write=False) as session:
        kept = editing.get_card(session, account_id=account_id, card_id=card)
        assert kept.tags == ["a", "b", "c"] and card_tally(kept).cards == {"a": 1, "b": 1, "c": 1}
        assert editing.get_card(session, account_id=other_account_id, card_id=foreign).tags == []


def test_creates_past_the_card_cap_fail_one_by_one(database: Database, account_id: str) -> None:
    """Stored together they would pass the cap: the items go one by one, those that fit are
    made and the rest answer CardLimitReached, as createCard would."""
    items = [{"content": f"card {i}"} for i in range(5)]
    with database.transaction() as session:
        batch = bulk.apply(session, account_id=account_id, operation="create", items=items, max_cards=3)
    assert [type(o.error) if o.error else None for o in batch.outcomes] == [None] * 3 + [CardLimitReached] * 2
    assert _count(database, account_id) == 3
