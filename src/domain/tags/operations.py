"""Account-wide tag rename, merge and delete, and the account's tag list.

An operation is a row; workers apply it in batches of cards in card order. Each batch changes the
cards and records its progress (cursor, counters, heartbeat) in one transaction, under a lock on
the row, so a repeated or concurrent message never applies a batch twice and a lost one is
picked up from the cursor by whoever runs next."""

from __future__ import annotations

import dataclasses

from sqlalchemy import ColumnElement, case, delete, func, select, tuple_, update
from sqlalchemy.orm import Session

from cardvault.adapters import metrics
from cardvault.domain import changes
from cardvault.domain.clock import now_ms
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.db import after_commit, lock_tags
from cardvault.domain.errors import NotFound, TagExists
from cardvault.domain.ids import new_id
from cardvault.domain.models import (
    Card,
    CardTag,
    TagCounter,
    TagOperation,
    TagSpelling,
    add_alone,
    get_owned,
    refuse_while_active,
)
from cardvault.domain.names import tag_key
from cardvault.domain.search.index import tag_words
from cardvault.domain.tags import counts
from cardvault.domain.tags.counts import TagRow
from cardvault.domain.tags.names import clean_tag

TOTAL_CAP = 10_000
BATCH_SIZE = 2000


def _has_tag(session: Session, account_id: str, key: str) -> bool:
    query = select(CardTag.card_pk).where(CardTag.account_id == account_id, CardTag.name_key == key)
    return session.scalar(query.limit(1)) is not None


def start_tag_operation(
    session: Session, *, account_id: str, kind: str, tag: str, to: str | None = None
) -> TagOperation:
    """Record a rename (tag -> to), merge (tag into to) or delete (tag) to be run by a worker."""
    from_name = clean_tag(tag)
    from_key = tag_key(from_name)
    to_name = clean_tag(to) if to is not None else None
    to_key = tag_key(to_name) if to_name is not None else None
    refuse_while_active(session, TagOperation, account_id=account_id)
    if not _has_tag(session, account_id, from_key):
        raise NotFound(f"No card has the tag {from_name!r}.")
    if kind == "rename" and to_key != from_key and _has_tag(session, account_id, to_key or ""):
        raise TagExists(f"The tag {to_name!r} exists; merge into it instead.", details={"tag": to_name})
    carrying = (
        select(CardTag.card_pk)
        .distinct()
        .where(CardTag.account_id == account_id, CardTag.name_key == from_key)
        .limit(TOTAL_CAP)
        .subquery()
    )
    now = now_ms()
    operation = TagOperation(
        id=new_id("tagop"),
        account_id=account_id,
        running_account_id=account_id,
        kind=kind,
        from_name=from_name,
        from_key=from_key,
        to_name=to_name,
        to_key=to_key,
        status="running",
        total=session.scalar(select(func.count()).select_from(carrying)) or 0,
        processed=0,
        changed=0,
        cursor_pk=0,
        created_at=now,
        updated_at=now,
        heartbeat_at=now,
    )
    add_alone(session, operation)
    return operation


def get_tag_operation(session: Session, *, account_id: str, operation_id: str) -> TagOperation:
    """Return the account's tag operation, or raise NotFound (also for another account's)."""
    return get_owned(session, TagOperation, row_id=operation_id, account_id=account_id)


def _finish(session: Session, operation: TagOperation, status: str, error: str | None = None) -> None:
    # Its ending is marked in the feed: webhooks tell tag_operation.completed or failed once.
    changes.note(
        session,
        account_id=operation.account_id,
        kind="tagOperation",
        ids=[operation.id],
        marks=changes.SETTLED,
    )
    now = now_ms()
    operation.status = status
    operation.error = error
    operation.running_account_id = None
    operation.completed_at = now
    operation.updated_at = now
    seconds = (now - operation.created_at) / 1000
    after_commit(session, lambda: metrics.job_ended("tag_operation", status, seconds))


def run_tag_batch(session: Session, *, operation_id: str, batch_size: int = BATCH_SIZE) -> bool:
    """Apply the next batch of a running operation; return whether it still runs.

    A batch is the next ``batch_size`` cards (in pk order, after the cursor) carrying the tag;
    every statement names them by the range (cursor, last] and the tag, never by a pk list."""
    operation = session.scalar(select(TagOperation).where(TagOperation.id == operation_id).with_for_update())
    if operation is None or operation.status != "running":
        return False
    account, from_key, cursor = operation.account_id, operation.from_key, operation.cursor_pk
    # No card of the account gains a tag until the batch commits (tag writers share this lock),
    # so every statement below sees the same cards carrying it, all of them locked by the batch.
    lock_tags(session, account_id=account, exclusive=True)
    upcoming = (
        select(CardTag.card_pk)
        .distinct()
        .where(CardTag.account_id == account, CardTag.name_key == from_key, CardTag.card_pk > cursor)
        .order_by(CardTag.card_pk)
        .limit(batch_size)
        .subquery()
    )
    looked_at, last = session.execute(select(func.count(), func.max(upcoming.c.card_pk))).one()
    if not looked_at:
        _finish(session, operation, "completed")
        return False

    def carrying(key: str) -> tuple[ColumnElement[bool], ...]:
        return (
            CardTag.account_id == account,
            CardTag.name_key == key,
            CardTag.card_pk > cursor,
            CardTag.card_pk <= last,
        )

    to_name, to_key = operation.to_name or "", operation.to_key or ""
    keys = [from_key] if operation.kind == "delete" else [from_key, to_key]
    rows_before = counts.range_rows(session, account_id=account, keys=keys, after_pk=cursor, last_pk=last)
    recase = operation.kind != "delete" and to_key == from_key
    batch = (*carrying(from_key), CardTag.name != to_name) if recase else carrying(from_key)
    now = now_ms()
    # Lock the batch's cards in pk order before touching them or their tags (the lock order in
    # cardvault.domain.db): the update changes exactly the rows its ordered subquery locked.
    locked = (
        select(Card.pk)
        .where(Card.pk > cursor, Card.pk <= last, Card.pk.in_(select(CardTag.card_pk).where(*batch)))
        .order_by(Card.pk)
        .with_for_update()
    )
    rewritten = session.scalars(
        update(Card)
        .where(Card.pk.in_(locked.scalar_subquery()))
        .values(updated_at=case((Card.updated_at > now, Card.updated_at), else_=now))
        .returning(Card.id)
        .execution_options(synchronize_session=False),
    ).all()
    changes.note(session, account_id=account, kind="card", ids=rewritten)
    changed = len(rewritten)
    if operation.kind == "delete":
        session.execute(delete(CardTag).where(*batch).execution_options(synchronize_session=False))
    else:
        if not recase:
            # A card that already has the target tag (of the same kind) keeps its own copy.
            targets = select(CardTag.card_pk, CardTag.kind).where(*carrying(to_key))
            duplicate = tuple_(CardTag.card_pk, CardTag.kind).in_(targets)
            session.execute(
                delete(CardTag).where(*batch, duplicate).execution_options(synchronize_session=False)
            )
        session.execute(
            update(CardTag)
            .where(*batch)
            .values(name=to_name, name_key=to_key, words=tag_words(to_name))
            .execution_options(synchronize_session=False)
        )
    counts.apply(
        session,
        account_id=account,
        before=counts.rows_tally(rows_before),
        after=counts.rows_tally(_changed_rows(operation, rows_before)),
    )
    operation.cursor_pk = last
    operation.processed += looked_at
    operation.changed += changed
    operation.heartbeat_at = operation.updated_at = now
    return True


def _changed_rows(operation: TagOperation, rows: list[TagRow]) -> list[TagRow]:
    """The tag rows (with the operation's keys) of a batch's cards after the batch, from those
    before it: the same change run_tag_batch's statements make in the database."""
    from_key, to_key, to_name = operation.from_key, operation.to_key, operation.to_name or ""
    if operation.kind == "delete":
        return [row for row in rows if row.name_key != from_key]
    assert to_key is not None, "a rename or merge names its target"
    if to_key == from_key:
        return [row._replace(name=to_name) for row in rows]
    # A card that already has the target tag (of the same kind) keeps its own copy.
    targets = {(row.card_pk, row.kind) for row in rows if row.name_key == to_key}
    return [row for row in rows if row.name_key == to_key] + [
        row._replace(name_key=to_key, name=to_name)
        for row in rows
        if row.name_key == from_key and (row.card_pk, row.kind) not in targets
    ]


def fail_tag_operation(session: Session, *, operation_id: str, error: str) -> None:
    """Mark a running operation failed, freeing the account for another."""
    operation = session.get(TagOperation, operation_id, with_for_update=True)
    if operation is not None and operation.status == "running":
        _finish(session, operation, "failed", error)


def stale_tag_operations(session: Session, *, older_than_ms: int) -> list[str]:
    """Return the running operations whose last batch is older than this many milliseconds."""
    cutoff = now_ms() - older_than_ms
    query = select(TagOperation.id).where(
        TagOperation.status == "running", TagOperation.heartbeat_at < cutoff
    )
    return list(session.scalars(query))


@dataclasses.dataclass(frozen=True)
class TagCount:
    name: str
    count: int


@dataclasses.dataclass(frozen=True)
class TagPage:
    tags: list[TagCount]
    next_cursor: str | None
    total: int


def list_tags(
    session: Session,
    *,
    account_id: str,
    secret: str,
    sort: str = "name",
    limit: int = 100,
    cursor: str | None = None,
) -> TagPage:
    """Return a page of the account's tags (user and AI) with how many cards outside Trash
    carry each, read from the counts kept by cardvault.domain.tags.counts."""
    mine = TagCounter.account_id == account_id
    total = session.scalar(select(func.count()).select_from(TagCounter).where(mine)) or 0
    scope = f"tags:{account_id}:{sort}"
    query = select(TagCounter.name_key, TagCounter.cards).where(mine)
    if sort == "count":
        query = query.order_by(TagCounter.cards.desc(), TagCounter.name_key)
        if cursor is not None:
            last_count, last_key = decode_cursor(secret, cursor, scope=scope, size=2)
            query = query.where(
                (TagCounter.cards < last_count)
                | ((TagCounter.cards == last_count) & (TagCounter.name_key > last_key))
            )
    else:
        query = query.order_by(TagCounter.name_key)
        if cursor is not None:
            (last_key,) = decode_cursor(secret, cursor, scope=scope, size=1)
            query = query.where(TagCounter.name_key > last_key)
    rows = session.execute(query.limit(limit + 1)).all()
    page, more = rows[:limit], len(rows) > limit
    names = display_names(session, account_id, [row[0] for row in page])
    next_cursor = None
    if more:
        last_key, last_count = page[-1]
        position: list[int | str] = [last_count, last_key] if sort == "count" else [last_key]
        next_cursor = encode_cursor(secret, scope=scope, position=position)
    return TagPage([TagCount(names[key], n) for key, n in page], next_cursor, total)


def tags_by_key(session: Session, *, account_id: str, keys: list[str]) -> dict[str, TagCount]:
    """The account's tags among these folded names, as the tag list shows them (a key no card
    outside Trash carries is left out)."""
    rows = session.execute(
        select(TagCounter.name_key, TagCounter.cards).where(
            TagCounter.account_id == account_id, TagCounter.name_key.in_(keys)
        )
    ).all()
    names = display_names(session, account_id, [key for key, _ in rows])
    return {key: TagCount(names[key], n) for key, n in rows}


def display_names(session: Session, account_id: str, keys: list[str]) -> dict[str, str]:
    """The spelling most tag rows use for each tag (ties: the first in code-point order)."""
    if not keys:
        return {}
    rows = session.execute(
        select(TagSpelling.name_key, TagSpelling.name, TagSpelling.uses).where(
            TagSpelling.account_id == account_id, TagSpelling.name_key.in_(keys)
        )
    ).all()
    best: dict[str, tuple[int, str]] = {}
    for key, name, n in rows:
        if key not in best or (-n, name) < (-best[key][0], best[key][1]):
            best[key] = (n, name)
    return {key: name for key, (_, name) in best.items()}
