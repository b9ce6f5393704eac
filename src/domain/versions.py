"""Versions: the integer each card, folder and webhook carries (``version``), raised by every
write to it, behind its strong ETag and the changes feed's ``version`` (conditional requests,
docs/conditional-requests.md).

Every write raises it once per transaction, two ways, so no write path has to remember to:

- through the ORM: before each flush, every card, folder or webhook the session changed (a
  column, or its tags or folder places) and not yet raised in this transaction gets
  ``version + 1`` in the same UPDATE (``install``);
- in bulk: a statement that changed cards notes them for the changes feed
  (cardvault.domain.changes.note), and the feed raises, at COMMIT, the version of each card
  it records that the ORM did not raise (``raise_noted``). Whoever notes a card holds its row
  lock already (the lock order in cardvault.domain.db), so that UPDATE waits for no one.

A folder's version is its own row's: its ``cardCount`` moves with other rows (a card going to
Trash or coming back) and never with a lock on the folder, which would invert the lock order
(a folder before its cards). Its ETag therefore names both, ``"<version>.<cardCount>"``
(``folder_etag``): it changes whenever the representation does, and a write to the folder
still takes only the folder's row lock.

A webhook's version moves only with what its representation shows: its delivery bookkeeping
(the position, the sending lease) changes it many times a minute and is no change to a client.

A precondition is checked with the row locked (``require``): SELECT ... FOR UPDATE on
PostgreSQL, and SQLite's writers hold its one write lock (BEGIN IMMEDIATE), so two writers
sending the same If-Match cannot both pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, Table, bindparam, event, inspect, select, update
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.orm.attributes import flag_modified

from cardvault.domain.errors import PreconditionFailed
from cardvault.domain.models import Card, CardTag, Folder, Webhook
from cardvault.domain.models.ownership import get_owned
from cardvault.domain.pending import Pending

Versioned = Card | Folder | Webhook
Row = TypeVar("Row", Card, Folder, Webhook)
_KINDS: dict[type, str] = {Card: "card", Folder: "folder", Webhook: "webhook"}
# What the changes feed records whose version a COMMIT raises.
_TABLES: dict[str, Table] = {"card": cast(Table, Card.__table__)}
# A webhook's columns no response shows: changing them alone keeps its version.
_WEBHOOK_UNSHOWN = frozenset({"position", "sending_lease", "sending_until", "credential_id", "secret"})
# session.info's resources raised in this transaction: {(kind, id): True}
_RAISED: Pending[tuple[str, str], bool] = Pending("cardvault.versions")


def install(sessions: sessionmaker[Session]) -> None:
    """Raise the version of what each session's flushes change."""
    event.listen(sessions, "before_flush", _raise_changed)
    _RAISED.install(sessions)


def _raise_changed(session: Session, _context: Any, _instances: Any) -> None:
    raised = _RAISED.of(session)
    # A tag row changed alone (re-spelled, moved) changes its card's tags.
    retagged = {
        id(card): card
        for row in (*session.dirty, *session.new, *session.deleted)
        if isinstance(row, CardTag) and (card := _loaded_card(session, row)) is not None
    }
    for instance in (*session.dirty, *(card for card in retagged.values() if card not in session.dirty)):
        kind = _KINDS.get(type(instance))
        if kind is None or (kind, instance.id) in raised:
            continue
        if id(instance) not in retagged and not _shown_change(session, instance):
            continue
        instance.version = instance.version + 1
        raised[(kind, instance.id)] = True
    for instance in session.new:
        kind = _KINDS.get(type(instance))
        if kind is not None:  # inserted at its default version: no raise to come this transaction
            raised[(kind, instance.id)] = True


def _loaded_card(session: Session, row: CardTag) -> Card | None:
    """The card of a tag row, when the session holds it (a tag is changed through its card)."""
    found = session.identity_map.get(session.identity_key(Card, (row.card_pk,)))
    keep = isinstance(found, Card) and found not in session.new and found not in session.deleted
    return found if keep else None


def _shown_change(session: Session, instance: Versioned) -> bool:
    if not session.is_modified(instance):
        return False
    if not isinstance(instance, Webhook):
        return True
    state = inspect(instance)
    return any(attr.history.has_changes() for attr in state.attrs if attr.key not in _WEBHOOK_UNSHOWN)


def touch(instance: Versioned) -> None:
    """Raise the version at the next flush of a resource whose representation a change of
    other rows moved (a folder's cardCount), so a response rendered in the transaction shows
    the version it commits."""
    flag_modified(instance, "version")


def released(session: Session) -> None:
    """A savepoint is released: its raises are the transaction's (the changes feed calls it)."""
    _RAISED.released(session)


def raise_noted(
    session: Session, connection: Connection | None, noted: Iterable[tuple[str, str, str]]
) -> None:
    """Raise the version of each card (account, kind, id) the changes feed records at this
    COMMIT that no flush of the transaction raised: what statements changed in bulk.
    Called at every COMMIT (it forgets the transaction's raises); ``connection`` is None when
    nothing is recorded."""
    raised = _RAISED.take(session)
    missed: dict[str, list[dict[str, str]]] = {}
    for account_id, kind, resource_id in noted:
        if kind in _TABLES and (kind, resource_id) not in raised:
            missed.setdefault(kind, []).append({"account": account_id, "rid": resource_id})
    for kind, rows in missed.items():
        assert connection is not None
        table = _TABLES[kind]
        connection.execute(
            update(table)
            .where(table.c.account_id == bindparam("account"), table.c.id == bindparam("rid"))
            .values(version=table.c.version + 1),
            rows,
        )


def etag(version: int) -> str:
    """The strong entity tag of a resource at this version (RFC 9110 §8.8.3)."""
    return f'"{version}"'


def folder_etag(version: int, card_count: int) -> str:
    """A folder's strong entity tag: its row's version and its cardCount (see above)."""
    return f'"{version}.{card_count}"'


@dataclasses.dataclass(frozen=True)
class Condition:
    """An If-Match or If-None-Match field, parsed: ``*``, or its entity tags (the opaque part
    with its quotes) and whether each is weak."""

    any: bool = False
    tags: tuple[tuple[bool, str], ...] = ()

    def matches_strongly(self, current: str) -> bool:
        """If-Match's comparison (RFC 9110 §8.8.3.2): a weak tag never matches."""
        return self.any or any(not weak and tag == current for weak, tag in self.tags)

    def matches_weakly(self, current: str) -> bool:
        """If-None-Match's comparison: weak and strong tags alike."""
        return self.any or any(tag == current for _, tag in self.tags)


def require(
    session: Session, model: type[Row], *, account_id: str, row_id: str, condition: Condition | None
) -> None:
    """Check an If-Match condition against the row, locked until the transaction ends; raise
    PreconditionFailed (with the current ETag) when it fails. A missing row raises NotFound
    whatever the condition (RFC 9110 §13.2.1: preconditions are evaluated only when the answer
    without them would be a success). Only the version is read: the write reads the row."""
    if condition is not None:
        check(etag(locked_version(session, model, account_id=account_id, row_id=row_id)), condition)


def locked_version(session: Session, model: type[Row], *, account_id: str, row_id: str) -> int:
    """The row's version, its row locked until the transaction ends (SELECT ... FOR UPDATE);
    NotFound when the account has no such row."""
    locked = select(model.version).where(model.id == row_id, model.account_id == account_id)
    version = session.scalar(locked.with_for_update())
    if version is None:
        get_owned(session, model, row_id=row_id, account_id=account_id)  # raises its NotFound
        raise AssertionError("unreachable: no such row")
    return version


def compare(row: Card | Webhook, condition: Condition | None) -> None:
    """Check an If-Match condition against a row already read (one the request will not
    change, so no lock is needed)."""
    check(etag(row.version), condition)


def check(current: str, condition: Condition | None) -> None:
    """Raise PreconditionFailed when the condition names no current entity tag."""
    if condition is not None and not condition.matches_strongly(current):
        raise PreconditionFailed(current)
