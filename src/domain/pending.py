"""What a writing session notes during its transaction, to be written once just before COMMIT
(the changes feed's changes, the vocabulary's word counts), following savepoints exactly: a
savepoint rolled back forgets what was noted since it began (perhaps by a failed flush inside
it), a released one hands it to the transaction around it, and a transaction rolled back
forgets everything. The notes are a dict in ``session.info``; its values are never changed in
place (a savepoint keeps a shallow copy of the dict as it was when it began)."""

from __future__ import annotations

from typing import Generic, TypeVar

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

K = TypeVar("K")
V = TypeVar("V")


class Pending(Generic[K, V]):
    """A session's notes under ``session.info[name]``; ``install`` it on a sessionmaker."""

    def __init__(self, name: str) -> None:
        self._key = name
        self._saved = f"{name}.savepoints"  # {id(savepoint): (savepoint, the notes when it began)}

    def install(self, sessions: sessionmaker[Session]) -> None:
        event.listen(sessions, "after_transaction_create", self._savepoint_begins)
        event.listen(sessions, "after_soft_rollback", self._rolled_back)

    def of(self, session: Session) -> dict[K, V]:
        """The session's notes, to add to (replace values, never change them in place)."""
        notes: dict[K, V] = session.info.setdefault(self._key, {})
        return notes

    def released(self, session: Session) -> bool:
        """Called first by a ``before_commit`` listener: whether what commits is a savepoint,
        released (its notes are the outer transaction's, written at its COMMIT)."""
        if not session.in_nested_transaction():
            return False
        saved: dict[int, object] = session.info.get(self._saved, {})
        saved.pop(id(session.get_nested_transaction()), None)
        return True

    def take(self, session: Session) -> dict[K, V]:
        """The transaction's notes at its COMMIT, taken from the session."""
        session.info.pop(self._saved, None)
        notes: dict[K, V] = session.info.pop(self._key, {})
        return notes

    def _savepoint_begins(self, session: Session, transaction: SessionTransaction) -> None:
        if transaction.nested:
            notes = dict(session.info.get(self._key, {}))
            session.info.setdefault(self._saved, {})[id(transaction)] = (transaction, notes)

    def _rolled_back(self, session: Session, previous: SessionTransaction) -> None:
        if previous.parent is None:  # the whole transaction: nothing of it is written
            session.info.pop(self._key, None)
            session.info.pop(self._saved, None)
            return
        # A savepoint no longer active and not released (a release drops its entry) was rolled
        # back: what was noted since it began is undone.
        saved: dict[int, tuple[SessionTransaction, dict[K, V]]] = session.info.get(self._saved, {})
        undone = [key for key, (transaction, _) in saved.items() if not transaction.is_active]
        if undone:
            session.info[self._key] = saved[undone[0]][1]  # the outermost one's (made first)
            for key in undone:
                del saved[key]
