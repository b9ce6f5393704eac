"""The changes feed's record: every change to an account's cards and folders is written in the
same transaction as the change itself, as the resource's latest change (an earlier change of
the same resource is replaced, so the feed holds each resource once: as it is now, or its
tombstone).

Ordering. A reader that has read up to sequence S must never later meet a change committed
with a sequence below S. Sequences therefore follow commit order: a writing transaction takes
its account's sequences last, just before COMMIT (``before_commit``), by raising its account's
counter row, which it then holds locked until it commits; another transaction of the same
account waits there for it and takes the sequences after it. On SQLite one writer at a time
holds the database, which gives the same order. A transaction that rolls back gives its
sequences back with everything else.

What is recorded: the cards, folders, tag operations, exports, annotations, shares and feed
subscriptions the session inserted, changed or deleted through the ORM (collected after each
flush; a change of only a kind's ``_QUIET`` columns is none: a subscription's poll that moved
only its poll times and validators), and what a statement changed in bulk,
noted by its caller with ``note`` (a tag operation's batch, the Trash's purge, a folder's cards
when it goes, a stage that settled, and every tag whose count or spelling moved, by its folded
name, from cardvault.domain.tags.counts). ``install`` puts the listeners on a sessionmaker of
writing sessions."""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, delete, event, inspect, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from cardvault.domain import versions
from cardvault.domain.clock import now_ms
from cardvault.domain.models import Annotation, Card, Change, ChangeCounter, ExportJob, Folder, TagOperation
from cardvault.domain.models.shares import Share
from cardvault.domain.models.subscriptions import Subscription
from cardvault.domain.pending import Pending
from cardvault.domain.statements import driver_rows

log = logging.getLogger("cardvault.changes")
KINDS = ("card", "folder", "tag", "tagOperation", "export", "annotation", "share", "subscription")
# Marks: the resource was created; it settled (a card's processing, a tag operation or export
# ended). Each keeps the last sequence it was made at, so a webhook endpoint is told it once.
CREATED, SETTLED = 1, 2
# session.info's pending changes: {(account_id, kind, id): (action, marks)}
_PENDING: Pending[tuple[str, str, str], tuple[str, int]] = Pending("cardvault.changes")
_TRACKED: dict[type, str] = {
    Card: "card",
    Folder: "folder",
    TagOperation: "tagOperation",
    ExportJob: "export",
    Annotation: "annotation",
    Share: "share",
    Subscription: "subscription",
}
# Columns whose change alone is no change for the feed. A subscription's poll moves its poll
# times, validators and failure count every time (every 30 minutes or more, for each feed): a
# poll is a change only when what it did does (``lastError``, ``entriesSaved``), so unchanged
# feeds never flood the feed or the webhooks; ``lastPolledAt`` and ``nextPollAt`` are given as
# they are whenever the subscription is.
_QUIET: dict[type, frozenset[str]] = {
    Subscription: frozenset(
        {"last_polled_at", "next_poll_at", "etag", "last_modified", "failures", "last_error_message"}
    ),
}


def install(sessions: sessionmaker[Session]) -> None:
    """Record the changes of every session this sessionmaker makes. A savepoint's changes are
    kept only if it is released: rolled back, the changes noted since it began are forgotten
    (and only the outermost COMMIT records)."""
    event.listen(sessions, "after_flush", _collect)
    event.listen(sessions, "before_commit", _record)
    _PENDING.install(sessions)


_listeners: list[Callable[[str], object]] = []


def on_announce(listener: Callable[[str], object]) -> None:
    """Call ``listener(account_id)`` after each commit that recorded changes of an account with
    an enabled webhook (cardvault.bootstrap connects the webhooks' dispatcher so); a listener
    connected again is called once."""
    if listener not in _listeners:
        _listeners.append(listener)


def note(
    session: Session,
    *,
    account_id: str,
    kind: str,
    ids: Iterable[str],
    action: str = "upsert",
    marks: int = 0,
) -> None:
    """Note changes a statement made in bulk, to be recorded with the transaction's others."""
    pending = _PENDING.of(session)
    for resource_id in ids:
        key = (account_id, kind, resource_id)
        was, had = pending.get(key, (action, 0))
        # A resource created and deleted in one transaction is still a delete for a reader.
        pending[key] = ("delete" if was == "delete" else action, had | marks)


def _collect(session: Session, _transaction: Any) -> None:
    changed = [
        *((instance, "upsert", CREATED) for instance in session.new),
        *((instance, "upsert", 0) for instance in session.dirty if _shown_change(session, instance)),
        *((instance, "delete", 0) for instance in session.deleted),
    ]
    for instance, action, marks in changed:
        kind = _TRACKED.get(type(instance))
        if kind is not None:
            note(
                session,
                account_id=instance.account_id,
                kind=kind,
                ids=[instance.id],
                action=action,
                marks=marks,
            )


def _shown_change(session: Session, instance: object) -> bool:
    """Whether the flush changes a column of the instance other than its kind's quiet ones."""
    quiet = _QUIET.get(type(instance))
    if quiet is None:
        return session.is_modified(instance)
    state = inspect(instance)
    return any(
        state.attrs[column.key].history.has_changes()
        for column in state.mapper.column_attrs
        if column.key not in quiet
    )


def _record(session: Session) -> None:
    if _PENDING.released(session):  # a savepoint's changes are recorded at the outer COMMIT
        versions.released(session)
        return
    session.flush()  # what the COMMIT would flush is collected first
    pending = _PENDING.take(session)
    upserts = [key for key, (action, _) in pending.items() if action == "upsert"]
    versions.raise_noted(session, session.connection() if upserts else None, upserts)
    if not pending:
        return
    by_account: dict[str, list[_Made]] = {}
    for (account_id, kind, resource_id), (action, marks) in pending.items():
        by_account.setdefault(account_id, []).append((kind, resource_id, action, marks))
    connection = session.connection()
    record = _record_postgresql if connection.dialect.name == "postgresql" else _record_sqlite
    now = now_ms()
    announced = [
        account_id
        for account_id in sorted(by_account)  # one order of counter locks for every transaction
        if record(connection, account_id, by_account[account_id], now)
    ]
    if announced and _listeners:
        event.listen(session, "after_commit", functools.partial(_announce, announced), once=True)


def _announce(accounts: list[str], _session: Session) -> None:
    for account_id in accounts:
        for listener in _listeners:
            try:
                listener(account_id)
            except Exception:  # the sweeper dispatches what a lost announcement left behind
                log.warning("announcing changes of %s failed", account_id, exc_info=True)


# Written as SQL for the driver: a change is recorded in every writing transaction, and its
# statements are most of what it costs (bench/bench_changes.py). Most transactions record one
# change (a card edited): its statement takes no arrays, and costs PostgreSQL a third less.
_PG_COUNTER = """
    INSERT INTO change_counters (account_id, last_sequence, purged_through, webhooks)
    VALUES (%(account)s, %(count)s, 0, 0)
    ON CONFLICT (account_id) DO UPDATE SET last_sequence = change_counters.last_sequence + %(count)s
    RETURNING last_sequence, webhooks
"""
_PG_REPLACING = """
    ON CONFLICT (account_id, kind, resource_id) DO UPDATE
        SET sequence = EXCLUDED.sequence, action = EXCLUDED.action, changed_at = EXCLUDED.changed_at,
            created_sequence = GREATEST(changes.created_sequence, EXCLUDED.created_sequence),
            processed_sequence = GREATEST(changes.processed_sequence, EXCLUDED.processed_sequence)
"""
_PG_RECORD_ONE = f"""
WITH counter AS ({_PG_COUNTER}), recorded AS (
    INSERT INTO changes (account_id, sequence, kind, resource_id, action, changed_at, created_sequence,
        processed_sequence)
    SELECT %(account)s, last_sequence, %(kind)s, %(id)s, %(action)s, %(now)s,
        CASE WHEN %(created)s THEN last_sequence ELSE 0 END,
        CASE WHEN %(settled)s THEN last_sequence ELSE 0 END
    FROM counter
    {_PG_REPLACING}
)
SELECT webhooks FROM counter
"""
_PG_RECORD = f"""
WITH counter AS ({_PG_COUNTER}), made AS (
    SELECT counter.last_sequence - %(count)s + made.n AS sequence, made.kind, made.id, made.action,
        made.marks
    FROM counter, unnest(%(kinds)s::text[], %(ids)s::text[], %(actions)s::text[], %(marks)s::int[])
        WITH ORDINALITY AS made(kind, id, action, marks, n)
), recorded AS (
    INSERT INTO changes (account_id, sequence, kind, resource_id, action, changed_at, created_sequence,
        processed_sequence)
    SELECT %(account)s, sequence, kind, id, action, %(now)s,
        CASE WHEN marks & 1 = 1 THEN sequence ELSE 0 END, CASE WHEN marks & 2 = 2 THEN sequence ELSE 0 END
    FROM made
    {_PG_REPLACING}
)
SELECT webhooks FROM counter
"""
_SQLITE_TAKE = """
INSERT INTO change_counters (account_id, last_sequence, purged_through, webhooks) VALUES (?, ?, 0, 0)
ON CONFLICT (account_id) DO UPDATE SET last_sequence = last_sequence + excluded.last_sequence
RETURNING last_sequence, webhooks
"""
_SQLITE_RECORD = """
INSERT INTO changes (account_id, sequence, kind, resource_id, action, changed_at, created_sequence,
    processed_sequence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, kind, resource_id) DO UPDATE
    SET sequence = excluded.sequence, action = excluded.action, changed_at = excluded.changed_at,
        created_sequence = max(created_sequence, excluded.created_sequence),
        processed_sequence = max(processed_sequence, excluded.processed_sequence)
"""
_Made = tuple[str, str, str, int]  # kind, resource id, action, marks


def _record_postgresql(connection: Connection, account_id: str, made: list[_Made], now: int) -> bool:
    """Take the account's next sequences (its counter row locked until COMMIT) and record the
    changes under them, each replacing its resource's earlier change: one statement. Answer
    whether the account has an enabled webhook."""
    parameters: dict[str, Any] = {"account": account_id, "count": len(made), "now": now}
    if len(made) == 1:
        ((kind, resource_id, action, marks),) = made
        statement = _PG_RECORD_ONE
        parameters.update(kind=kind, id=resource_id, action=action)
        parameters.update(created=bool(marks & CREATED), settled=bool(marks & SETTLED))
    else:
        kinds, ids, actions, marks_of = (list(column) for column in zip(*made, strict=True))
        statement = _PG_RECORD
        parameters.update(kinds=kinds, ids=ids, actions=actions, marks=marks_of)
    ((hooks,),) = driver_rows(connection, statement, parameters)
    return bool(hooks)


def _record_sqlite(connection: Connection, account_id: str, made: list[_Made], now: int) -> bool:
    """As on PostgreSQL, in two statements (the transaction holds SQLite's one write lock)."""
    # sqlite3's own connection, in the transaction this session began (we issue BEGIN):
    # SQLAlchemy's statement machinery cost more than the statements.
    driver = connection.connection.driver_connection
    assert driver is not None
    try:
        last, hooks = driver.execute(_SQLITE_TAKE, (account_id, len(made))).fetchone()
        first = int(last) - len(made) + 1
        rows = [
            (
                account_id,
                seq,
                kind,
                rid,
                action,
                now,
                seq if marks & CREATED else 0,
                seq if marks & SETTLED else 0,
            )
            for seq, (kind, rid, action, marks) in enumerate(made, start=first)
        ]
        driver.executemany(_SQLITE_RECORD, rows)
    except sqlite3.Error as exc:  # as SQLAlchemy would raise it: a full disk, a busy database
        raise DBAPIError.instance(_SQLITE_RECORD, None, exc, sqlite3.Error) from exc
    return bool(hooks)


def page(session: Session, *, account_id: str, after: int, limit: int) -> Sequence[Change]:
    """The account's changes after sequence ``after``, oldest first, at most ``limit``."""
    return session.scalars(
        select(Change)
        .where(Change.account_id == account_id, Change.sequence > after)
        .order_by(Change.sequence)
        .limit(limit)
    ).all()


def latest(session: Session, *, account_id: str) -> int:
    """The account's last sequence (0 before its first change)."""
    found = session.scalar(select(ChangeCounter.last_sequence).where(ChangeCounter.account_id == account_id))
    return int(found or 0)


PURGE_BATCH = 1000


def purge(session: Session, *, older_than: int, accounts: int = 50) -> int:
    """Delete up to PURGE_BATCH changes older than ``older_than`` (ms) of each of up to
    ``accounts`` accounts, raising each account's ``purged_through`` to the last sequence
    deleted (a cursor before it has lost changes); return how many. Each counter row is locked
    first, in account order, as writers lock it before they touch their change rows."""
    found = session.scalars(
        select(Change.account_id).where(Change.changed_at < older_than).distinct().limit(accounts)
    ).all()
    deleted = 0
    for account_id in sorted(found):
        session.execute(
            select(ChangeCounter.account_id).where(ChangeCounter.account_id == account_id).with_for_update()
        )
        oldest = (
            select(Change.sequence)
            .where(Change.account_id == account_id, Change.changed_at < older_than)
            .order_by(Change.sequence)
            .limit(PURGE_BATCH)
        )
        gone = session.scalars(
            delete(Change)
            .where(Change.account_id == account_id, Change.sequence.in_(oldest.scalar_subquery()))
            .returning(Change.sequence)
        ).all()
        if gone:
            counter = session.get(ChangeCounter, account_id)
            if counter is not None:
                counter.purged_through = max(counter.purged_through, *gone)
            deleted += len(gone)
    return deleted


def purged_through(session: Session, *, account_id: str) -> int:
    """The account's last purged sequence: a cursor before it has lost changes."""
    found = session.scalar(select(ChangeCounter.purged_through).where(ChangeCounter.account_id == account_id))
    return int(found or 0)
