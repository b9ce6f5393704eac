"""Trash: cards moved there leave lists and search, keep their data, and are deleted for good
on request or once they have been there longer than the retention period."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy import ColumnElement, Row, delete, select
from sqlalchemy.orm import Session

from cardvault.domain import changes
from cardvault.domain.annotations import records
from cardvault.domain.cards import holdings
from cardvault.domain.cards.editing import get_card
from cardvault.domain.clock import now_ms
from cardvault.domain.db import lock_tags
from cardvault.domain.errors import CardNotInTrash
from cardvault.domain.files import quotas
from cardvault.domain.models import Card, Share
from cardvault.domain.search.index import unindex_cards
from cardvault.domain.tags import counts

PURGE_BATCH = 500
DAY_MS = 86_400_000


def retention_ms(days: float) -> int:
    """How long a card stays in Trash, in milliseconds."""
    return int(days * DAY_MS)


def purge_at(deleted_at: int | None, *, days: float) -> int:
    """When a card that went to Trash at ``deleted_at`` will be deleted for good."""
    return (deleted_at or 0) + retention_ms(days)


def move_to_trash(session: Session, *, account_id: str, card_id: str) -> Card:
    """Move the card to Trash; moving it again keeps the first time."""
    # The card's tags leave the tag counts: no tag batch may run meanwhile (cardvault.domain.db).
    lock_tags(session, account_id=account_id)
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    if card.deleted_at is None:
        tags = counts.card_tally(card)
        card.deleted_at = now_ms()
        card.updated_at = max(card.deleted_at, card.updated_at)
        counts.apply(session, account_id=account_id, before=tags, after=counts.NONE)
        _note_folders(session, card)
    return card


def restore(session: Session, *, account_id: str, card_id: str) -> Card:
    """Take the card out of Trash, back where it was (archived cards return to the archive)."""
    lock_tags(session, account_id=account_id)  # its tags come back into the tag counts
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    if card.deleted_at is not None:
        card.deleted_at = None
        card.updated_at = max(now_ms(), card.updated_at)
        counts.apply(session, account_id=account_id, before=counts.NONE, after=counts.card_tally(card))
        _note_folders(session, card)
    return card


def _note_folders(session: Session, card: Card) -> None:
    """The card's folders count only cards outside Trash: their cardCount moved."""
    folder_ids = [row.folder_id for row in card.folder_rows]
    changes.note(session, account_id=card.account_id, kind="folder", ids=folder_ids)


def delete_forever(session: Session, *, account_id: str, card_id: str) -> None:
    """Delete a card in Trash with everything attached to it."""
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    if card.deleted_at is None:
        raise CardNotInTrash("Only a card in Trash can be deleted forever; move it to Trash first.")
    unindex_cards(session, [(card.pk, card.account_id)])
    records.forget_cards(session, [card.pk])
    _forget_shares(session, [card.pk])
    session.delete(card)
    quotas.count(session, account_id=account_id, stored=-((card.file_size or 0) + card.held_bytes))
    holdings.release(session, {account_id: 1})


def _forget_shares(session: Session, card_pks: Sequence[int]) -> None:
    """Before cards are deleted for good (the database deletes their shares with them): note
    each share's tombstone for the changes feed."""
    rows = session.execute(select(Share.account_id, Share.id).where(Share.card_pk.in_(card_pks))).all()
    for account_id, share_id in rows:
        changes.note(session, account_id=account_id, kind="share", ids=[share_id], action="delete")


def _delete_locked(
    session: Session, condition: ColumnElement[bool], limit: int
) -> Sequence[Row[int, str, int | None, str, int]]:
    """Lock up to ``limit`` matching cards in pk order (the lock order in cardvault.domain.db)
    and delete them (their tombstones noted for the feed); return their pk, account_id,
    file_size, id and held bytes, in that order."""
    cards = session.execute(
        select(Card.pk, Card.account_id, Card.file_size, Card.id, Card.held_bytes)
        .where(condition)
        .order_by(Card.pk)
        .limit(limit)
        .with_for_update()
    ).all()
    if cards:
        pks = [card.pk for card in cards]
        unindex_cards(session, [(card.pk, card.account_id) for card in cards])
        records.forget_cards(session, pks)
        _forget_shares(session, pks)
        session.execute(delete(Card).where(Card.pk.in_(pks)).execution_options(synchronize_session=False))
        for card in cards:
            changes.note(session, account_id=card.account_id, kind="card", ids=[card.id], action="delete")
    return cards


def empty_trash(session: Session, *, account_id: str) -> int:
    """Delete every card of the account's Trash; return how many."""
    in_trash = (Card.account_id == account_id) & Card.deleted_at.is_not(None)
    deleted = after = freed = 0
    # Each batch starts after the last one, so the whole transaction locks in ascending pk; a card
    # moved to Trash meanwhile behind it stays for the next time.
    while cards := _delete_locked(session, in_trash & (Card.pk > after), PURGE_BATCH):
        deleted, after = deleted + len(cards), cards[-1].pk
        freed += sum((card.file_size or 0) + card.held_bytes for card in cards)
    # Once, after every card: the account's row is the last lock (cardvault.domain.db).
    quotas.count(session, account_id=account_id, stored=-freed)
    holdings.release(session, {account_id: deleted})
    return deleted


def purge_expired(session: Session, *, retention_ms: int, limit: int = PURGE_BATCH) -> int:
    """Delete up to ``limit`` cards that have been in Trash longer than the retention; return how many."""
    deleted = _delete_locked(session, Card.deleted_at < now_ms() - retention_ms, limit)
    quotas.count_deleted_files(
        session, [(card.account_id, card.file_size, card.held_bytes) for card in deleted]
    )
    holdings.release(session, Counter(card.account_id for card in deleted))
    return len(deleted)
