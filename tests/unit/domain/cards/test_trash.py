"""Trash on a real database (SQLite and PostgreSQL): a card moved there keeps its data and leaves
the tag counts, comes back as it was, is deleted for good only from Trash, and is purged once
it has been there past the retention; another account's card is missing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select, update

from cardvault.domain.cards import editing, trash
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import CardNotInTrash, NotFound
from cardvault.domain.models import Card
from cardvault.domain.tags import operations

DAYS = 30


def _card(database: Database, account_id: str, **fields: object) -> str:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, content="kept", **fields).card.id  # type: ignore[arg-type]


def _in_session(database: Database, action: Callable[..., object], account_id: str, card_id: str) -> object:
    with database.transaction() as session:
        return action(session, account_id=account_id, card_id=card_id)


def _tag_counts(database: Database, account_id: str) -> dict[str, int]:
    with database.transaction(write=False) as session:
        page = operations.list_tags(session, account_id=account_id, secret="t" * 40)
    return {tag.name: tag.count for tag in page.tags}


def _exists(database: Database, card_id: str) -> bool:
    with database.transaction(write=False) as session:
        return session.scalar(select(Card.pk).where(Card.id == card_id)) is not None


def test_a_card_in_trash_keeps_its_data_and_leaves_the_tag_counts(
    database: Database, account_id: str
) -> None:
    card_id = _card(database, account_id, tags=["keep"], notes="n")
    with database.transaction() as session:
        card = trash.move_to_trash(session, account_id=account_id, card_id=card_id)
        assert card.deleted_at is not None and card.updated_at >= card.deleted_at
        first = card.deleted_at
    assert _tag_counts(database, account_id) == {}
    with database.transaction() as session:  # moving it again keeps the first time
        again = trash.move_to_trash(session, account_id=account_id, card_id=card_id)
        assert again.deleted_at == first and (again.content, again.notes, again.tags) == (
            "kept",
            "n",
            ["keep"],
        )
    assert _tag_counts(database, account_id) == {}


def test_a_restored_card_comes_back_with_its_tags_counted(database: Database, account_id: str) -> None:
    card_id = _card(database, account_id, tags=["keep"])
    _in_session(database, trash.move_to_trash, account_id, card_id)
    with database.transaction() as session:
        assert trash.restore(session, account_id=account_id, card_id=card_id).deleted_at is None
    assert _tag_counts(database, account_id) == {"keep": 1}
    _in_session(database, trash.restore, account_id, card_id)  # restoring it again changes nothing
    assert _tag_counts(database, account_id) == {"keep": 1}


def test_only_a_card_in_trash_is_deleted_forever(database: Database, account_id: str) -> None:
    card_id = _card(database, account_id)
    with pytest.raises(CardNotInTrash):
        _in_session(database, trash.delete_forever, account_id, card_id)
    assert _exists(database, card_id)
    _in_session(database, trash.move_to_trash, account_id, card_id)
    _in_session(database, trash.delete_forever, account_id, card_id)
    assert not _exists(database, card_id)
    with pytest.raises(NotFound):
        _in_session(database, trash.delete_forever, account_id, card_id)


@pytest.mark.parametrize("action", [trash.move_to_trash, trash.restore, trash.delete_forever])
def test_another_accounts_card_is_missing(
    database: Database, new_account: Callable[[], str], action: Callable[..., object]
) -> None:
    owner, other = new_account(), new_account()
    card_id = _card(database, owner)
    _in_session(database, trash.move_to_trash, owner, card_id)
    with pytest.raises(NotFound):
        _in_session(database, action, other, card_id)
    with database.transaction(write=False) as session:
        assert editing.get_card(session, account_id=owner, card_id=card_id).deleted_at is not None


def test_emptying_trash_deletes_the_accounts_trash_alone_in_batches(
    database: Database, new_account: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trash, "PURGE_BATCH", 2)
    mine, other = new_account(), new_account()
    trashed = [_card(database, mine) for _ in range(5)]
    kept, theirs = _card(database, mine), _card(database, other)
    for card_id in trashed:
        _in_session(database, trash.move_to_trash, mine, card_id)
    _in_session(database, trash.move_to_trash, other, theirs)
    with database.transaction() as session:
        assert trash.empty_trash(session, account_id=mine) == 5
    assert [_exists(database, c) for c in [*trashed, kept, theirs]] == [False] * 5 + [True, True]
    with database.transaction() as session:
        assert trash.empty_trash(session, account_id=mine) == 0


def test_cards_past_the_retention_are_purged_and_no_others(database: Database, account_id: str) -> None:
    expired, recent, live = (
        _card(database, account_id),
        _card(database, account_id),
        _card(database, account_id),
    )
    for card_id in (expired, recent):
        _in_session(database, trash.move_to_trash, account_id, card_id)
    with database.transaction() as session:
        old = now_ms() - trash.retention_ms(DAYS) - 60_000
        session.execute(update(Card).where(Card.id == expired).values(deleted_at=old))
    while True:  # in batches, as the purge actor does (other tests' cards may be due as well)
        with database.transaction() as session:
            purged = trash.purge_expired(session, retention_ms=trash.retention_ms(DAYS), limit=1)
        assert purged <= 1
        if purged == 0:
            break
    assert [_exists(database, c) for c in (expired, recent, live)] == [False, True, True]


def test_a_card_is_purged_the_retention_after_it_went_to_trash() -> None:
    assert trash.retention_ms(30) == 30 * 86_400_000
    assert trash.retention_ms(0.5) == 43_200_000
    assert trash.purge_at(1_000, days=1) == 1_000 + 86_400_000
