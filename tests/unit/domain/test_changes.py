"""The changes feed's record (cardvault.domain.changes): every change of a card or folder is
recorded in its own transaction, once per resource (its latest), with sequences in commit
order, so that a reader following the sequence never skips a change that commits late."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from sqlalchemy import event, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cardvault.domain import changes, folders
from cardvault.domain.cards import editing, trash
from cardvault.domain.db import Database
from cardvault.domain.models import Card, Change, Folder
from cardvault.domain.tags import operations


def _feed(database: Database, account_id: str, after: int = 0) -> list[tuple[int, str, str, str]]:
    with database.transaction(write=False) as session:
        return [
            (c.sequence, c.kind, c.resource_id, c.action)
            for c in changes.page(session, account_id=account_id, after=after, limit=1000)
        ]


def _card(database: Database, account_id: str, content: str = "note", **fields: object) -> str:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, content=content, **fields).card.id  # type: ignore[arg-type]


def test_a_card_is_in_the_feed_once_as_its_latest_change(database: Database, account_id: str) -> None:
    card_id = _card(database, account_id)
    assert _feed(database, account_id) == [(1, "card", card_id, "upsert")]
    with database.transaction() as session:
        editing.update_card(session, account_id=account_id, card_id=card_id, notes="n")
    with database.transaction() as session:
        trash.move_to_trash(session, account_id=account_id, card_id=card_id)
    assert _feed(database, account_id) == [(3, "card", card_id, "upsert")]  # the first two replaced
    with database.transaction() as session:
        trash.delete_forever(session, account_id=account_id, card_id=card_id)
    assert _feed(database, account_id) == [(4, "card", card_id, "delete")]
    with database.transaction(write=False) as session:
        assert changes.latest(session, account_id=account_id) == 4


def test_a_rolled_back_transaction_records_nothing_and_takes_no_sequence(
    database: Database, account_id: str
) -> None:
    first = _card(database, account_id)
    try:
        with database.transaction() as session:
            editing.add_card(session, account_id=account_id, content="gone")
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    second = _card(database, account_id)
    assert _feed(database, account_id) == [(1, "card", first, "upsert"), (2, "card", second, "upsert")]


def test_a_read_changes_nothing_and_an_untouched_card_is_not_recorded(
    database: Database, account_id: str
) -> None:
    card_id = _card(database, account_id)
    with database.transaction() as session:
        editing.get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    assert [seq for seq, *_ in _feed(database, account_id)] == [1]


def test_bulk_changes_are_recorded_for_every_card_they_touch(database: Database, account_id: str) -> None:
    tagged = [_card(database, account_id, f"note {n}", tags=["sea"]) for n in range(3)]
    other = _card(database, account_id, "other")
    with database.transaction() as session:
        folder = folders.create_folder(session, account_id=account_id, name="Shore", color=None)
        folders.add_cards(session, account_id=account_id, folder_id=folder.id, card_ids=[other])
    before = max(seq for seq, *_ in _feed(database, account_id))
    with database.transaction() as session:  # a tag rename rewrites its cards in batches
        operation = operations.start_tag_operation(
            session, account_id=account_id, kind="rename", tag="sea", to="ocean"
        )
    more = True
    while more:
        with database.transaction() as session:
            more = operations.run_tag_batch(session, operation_id=operation.id, batch_size=2)
    renamed = {rid for seq, kind, rid, _ in _feed(database, account_id, before) if kind == "card"}
    assert renamed == set(tagged)
    before = max(seq for seq, *_ in _feed(database, account_id))
    with database.transaction() as session:
        folders.delete_folder(session, account_id=account_id, folder_id=folder.id)
    assert {(kind, rid, action) for _, kind, rid, action in _feed(database, account_id, before)} == {
        ("folder", folder.id, "delete"),
        ("card", other, "upsert"),  # its folderIds changed
    }


def test_a_change_committed_after_a_reader_passed_its_start_is_still_read(
    database: Database, account_id: str
) -> None:
    # T1 changes card a and is held just before COMMIT, its sequence taken; meanwhile T2
    # changes card b and commits (or waits to). A reader reads between the two and moves its
    # cursor; it must still meet a afterwards. Were sequences given at the change (before
    # commit), b's would pass a's, the reader's cursor would pass a, and a would be lost.
    a, b = _card(database, account_id, "a"), _card(database, account_id, "b")
    start = max(seq for seq, *_ in _feed(database, account_id))
    held, release, t2_started, t2_done = (threading.Event() for _ in range(4))

    def change(card_id: str) -> None:
        with database.transaction() as session:
            session.execute(update(Card).where(Card.id == card_id).values(notes=f"changed {card_id}"))
            changes.note(session, account_id=account_id, kind="card", ids=[card_id])
            if card_id == a:
                event.listen(session, "before_commit", hold)  # after the recorder's

    def hold(_: Session) -> None:  # its sequence is taken
        held.set()
        release.wait(10)

    def second() -> None:
        t2_started.set()
        change(b)
        t2_done.set()

    one = threading.Thread(target=change, args=(a,))
    one.start()
    assert held.wait(10)
    two = threading.Thread(target=second)
    two.start()
    # T2 committed (were sequences given before commit) or waits for T1 (they are not).
    _wait_until(lambda: t2_done.is_set() or (t2_started.is_set() and _is_waiting(database)))
    read = _feed(database, account_id, start)
    cursor = max([start, *(seq for seq, *_ in read)])
    release.set()
    one.join(10)
    two.join(10)
    read += _feed(database, account_id, cursor)
    assert [rid for _, _, rid, _ in read] == [a, b]


def _is_waiting(database: Database) -> bool:
    """Whether a session waits for a lock (PostgreSQL); on SQLite the second writer waits at its
    BEGIN, before it changes anything, so there is nothing to wait for."""
    if database.dialect == "sqlite":
        return True
    with database.transaction(write=False) as session:
        waiting = text(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE NOT l.granted AND a.datname = current_database()"
        )
        return bool(session.scalar(waiting))


def _wait_until(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_purge_deletes_old_changes_in_batches_and_says_how_far(
    database: Database, account_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = [_card(database, account_id, f"old {n}") for n in range(5)]
    with database.transaction() as session:  # the first five changed long ago
        session.execute(update(Change).where(Change.resource_id.in_(old)).values(changed_at=1))
    recent = _card(database, account_id, "recent")
    monkeypatch.setattr(changes, "PURGE_BATCH", 2)
    purged = []
    while True:
        with database.transaction() as session:
            count = changes.purge(session, older_than=1_000)
        if not count:
            break
        purged.append(count)
    assert purged == [2, 2, 1]
    assert [rid for _, _, rid, _ in _feed(database, account_id)] == [recent]
    with database.transaction(write=False) as session:
        assert changes.purged_through(session, account_id=account_id) == 5
    _card(database, account_id, "after")  # the counter goes on
    assert [seq for seq, *_ in _feed(database, account_id)] == [6, 7]


def test_a_savepoint_keeps_its_changes_when_released_and_drops_them_when_rolled_back(
    database: Database, account_id: str
) -> None:
    with database.transaction() as session:
        folders.create_folder(session, account_id=account_id, name="Shore", color=None)
    before = max(seq for seq, *_ in _feed(database, account_id))
    with database.transaction() as session:
        outer = editing.add_card(session, account_id=account_id, content="outer").card.id
        with session.begin_nested():
            inner = editing.add_card(session, account_id=account_id, content="inner").card.id
        try:
            with session.begin_nested():
                lost = editing.add_card(session, account_id=account_id, content="lost").card.id
                session.add(
                    Folder(
                        id="fld_dup",
                        account_id=account_id,
                        name="Shore",
                        name_key="shore",
                        color=None,
                        kind="user",
                        created_at=0,
                        updated_at=0,
                    )
                )
                session.flush()  # the name is taken: this savepoint rolls back
        except IntegrityError:
            pass
    recorded = [(kind, rid) for _, kind, rid, _ in _feed(database, account_id, before)]
    assert recorded == [("card", outer), ("card", inner)] and lost not in {rid for _, rid in recorded}
