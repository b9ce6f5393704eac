"""Account-wide tag operations on a real database: rules, batches, idempotence, the race."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from cardvault.domain.cards import editing, listing
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidTag, NotFound, TagExists, TagOperationRunning
from cardvault.domain.models import CardTag
from cardvault.domain.tags import operations
from tests.conftest import Api

SECRET = "k" * 40


def add(db: Database, account: str, tags: list[str], ai: list[str] | None = None) -> str:
    with db.transaction() as session:
        card = editing.add_card(session, account_id=account, content="c", tags=tags).card
        if ai:
            editing.set_ai_tags(session, account_id=account, card_id=card.id, tags=ai)
        return card.id


def start(db: Database, account: str, kind: str, tag: str, to: str | None = None) -> str:
    with db.transaction() as session:
        return operations.start_tag_operation(session, account_id=account, kind=kind, tag=tag, to=to).id


def run(db: Database, operation_id: str, batch_size: int = 2) -> int:
    """Run batches to the end; return how many batches ran."""
    batches = 0
    while True:
        with db.transaction() as session:
            if not operations.run_tag_batch(session, operation_id=operation_id, batch_size=batch_size):
                return batches
        batches += 1


def tags_of(db: Database, account: str, card_id: str) -> tuple[list[str], list[str]]:
    with db.transaction(write=False) as session:
        card = editing.get_card(session, account_id=account, card_id=card_id)
        return card.tags, card.ai_tags


def operation(db: Database, account: str, operation_id: str) -> operations.TagOperation:
    with db.transaction(write=False) as session:
        return operations.get_tag_operation(session, account_id=account, operation_id=operation_id)


class TestRename:
    def test_renames_user_and_ai_tags_keeping_positions(self, database: Database, account_id: str) -> None:
        a = add(database, account_id, ["x", "Old", "y"], ai=["old"])
        b = add(database, account_id, ["OLD"])
        op = start(database, account_id, "rename", " old ", "New Name")
        run(database, op)
        assert tags_of(database, account_id, a) == (["x", "New Name", "y"], ["New Name"])
        assert tags_of(database, account_id, b) == (["New Name"], [])
        done = operation(database, account_id, op)
        assert (done.status, done.total, done.processed, done.changed) == ("completed", 2, 2, 2)
        assert done.from_key == "old" and done.to_name == "New Name" and done.running_account_id is None

    def test_recasing_changes_only_cards_spelled_otherwise(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["work"])
        same = add(database, account_id, ["Work"])
        op = start(database, account_id, "rename", "WORK", "Work")
        run(database, op)
        assert tags_of(database, account_id, same)[0] == ["Work"]
        done = operation(database, account_id, op)
        assert (done.processed, done.changed) == (2, 1)

    def test_refuses_a_target_that_exists(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["a"])
        add(database, account_id, ["B"])
        with database.transaction() as session, pytest.raises(TagExists):
            operations.start_tag_operation(session, account_id=account_id, kind="rename", tag="a", to="b")

    def test_refuses_a_tag_no_card_has(self, database: Database, account_id: str) -> None:
        with database.transaction() as session, pytest.raises(NotFound):
            operations.start_tag_operation(session, account_id=account_id, kind="delete", tag="ghost")

    def test_refuses_a_bad_tag_name(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["a"])
        with database.transaction() as session, pytest.raises(InvalidTag):
            operations.start_tag_operation(
                session, account_id=account_id, kind="rename", tag="a", to="x" * 65
            )

    def test_moves_updated_at_and_the_tag_filter_sees_the_result(
        self, database: Database, account_id: str
    ) -> None:
        card = add(database, account_id, ["from-tag"])
        with database.transaction(write=False) as session:
            before = editing.get_card(session, account_id=account_id, card_id=card).updated_at
        run(database, start(database, account_id, "rename", "from-tag", "to-tag"))
        with database.transaction(write=False) as session:
            after = editing.get_card(session, account_id=account_id, card_id=card)
            page = listing.list_cards(
                session, account_id=account_id, secret=SECRET, filters=CardFilter(tags=("TO-TAG",))
            )
            searched = listing.list_cards(
                session, account_id=account_id, secret=SECRET, filters=CardFilter(q="to tag")
            )
            old = listing.list_cards(
                session,
                account_id=account_id,
                secret=SECRET,
                filters=CardFilter(tags=("from-tag",)),
                with_total=True,
            )
        assert after.updated_at >= before
        assert [c.id for c in page.cards] == [card] == [c.id for c in searched.cards]
        assert old.total == 0


class TestMerge:
    def test_a_card_with_both_keeps_one_in_its_own_spelling(
        self, database: Database, account_id: str
    ) -> None:
        both = add(database, account_id, ["Later", "todo"])
        only = add(database, account_id, ["TODO", "x"])
        run(database, start(database, account_id, "merge", "todo", "later"))
        assert tags_of(database, account_id, both)[0] == ["Later"]
        assert tags_of(database, account_id, only)[0] == ["later", "x"]

    def test_merging_into_a_new_tag_renames(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, ["a"])
        run(database, start(database, account_id, "merge", "a", "b"))
        assert tags_of(database, account_id, card)[0] == ["b"]


class TestDelete:
    def test_removes_the_tag_everywhere_and_keeps_the_cards(
        self, database: Database, account_id: str
    ) -> None:
        card = add(database, account_id, ["keep", "drop"], ai=["DROP", "ai"])
        run(database, start(database, account_id, "delete", "Drop"))
        assert tags_of(database, account_id, card) == (["keep"], ["ai"])


class TestBatches:
    def test_a_repeated_batch_changes_nothing_and_counters_stay_exact(
        self, database: Database, account_id: str
    ) -> None:
        ids = [add(database, account_id, ["t"]) for _ in range(5)]
        op = start(database, account_id, "rename", "t", "u")
        assert run(database, op, batch_size=2) == 3
        assert run(database, op, batch_size=2) == 0  # a second message after completion
        done = operation(database, account_id, op)
        assert (done.processed, done.changed, done.status) == (5, 5, "completed")
        assert all(tags_of(database, account_id, i)[0] == ["u"] for i in ids)

    def test_a_missing_operation_is_a_no_op(self, database: Database) -> None:
        with database.transaction() as session:
            assert operations.run_tag_batch(session, operation_id="tagop_missing") is False

    def test_other_accounts_are_never_touched(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        add(database, owner, ["shared"])
        theirs = add(database, other, ["shared"])
        run(database, start(database, owner, "delete", "shared"))
        assert tags_of(database, other, theirs)[0] == ["shared"]
        with pytest.raises(NotFound):
            operation(database, other, start(database, other, "delete", "shared") + "x")

    def test_total_is_counted_up_to_ten_thousand(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["t"])
        op = start(database, account_id, "delete", "t")
        assert operation(database, account_id, op).total == 1
        assert operations.TOTAL_CAP == 10_000


class TestOneRunningOperationPerAccount:
    def test_a_second_operation_waits_for_the_first(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["a", "b"])
        first = start(database, account_id, "delete", "a")
        with database.transaction() as session, pytest.raises(TagOperationRunning) as caught:
            operations.start_tag_operation(session, account_id=account_id, kind="delete", tag="b")
        assert caught.value.details == {"operationId": first}
        run(database, first)
        start(database, account_id, "delete", "b")

    def test_simultaneous_starts_give_exactly_one_operation(
        self, database: Database, account_id: str
    ) -> None:
        for i in range(8):
            add(database, account_id, [f"t{i}"])
        barrier = threading.Barrier(8)
        outcomes: list[str] = []

        def attempt(i: int) -> None:
            barrier.wait()
            try:
                start(database, account_id, "delete", f"t{i}")
                outcomes.append("started")
            except TagOperationRunning:
                outcomes.append("refused")

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["refused"] * 7 + ["started"]


class TestListTags:
    def test_counts_cards_per_tag_ignoring_case_and_pages(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["Beta", "alpha"], ai=["ALPHA"])
        add(database, account_id, ["beta"])
        add(database, account_id, ["Beta", "gamma"])
        with database.transaction(write=False) as session:
            first = operations.list_tags(session, account_id=account_id, secret=SECRET, limit=2)
            rest = operations.list_tags(
                session, account_id=account_id, secret=SECRET, limit=2, cursor=first.next_cursor
            )
            by_count = operations.list_tags(session, account_id=account_id, secret=SECRET, sort="count")
        assert [(t.name, t.count) for t in first.tags] == [("ALPHA", 1), ("Beta", 3)]  # tie: code-point order
        assert [(t.name, t.count) for t in rest.tags] == [("gamma", 1)] and rest.next_cursor is None
        assert [t.name for t in by_count.tags] == ["Beta", "ALPHA", "gamma"] and first.total == 3

    def test_no_duplicate_rows_after_a_merge(self, database: Database, account_id: str) -> None:
        add(database, account_id, ["a", "b"])
        run(database, start(database, account_id, "merge", "a", "b"))
        with database.transaction(write=False) as session:
            rows = session.scalar(
                select(func.count()).select_from(CardTag).where(CardTag.account_id == account_id)
            )
        assert rows == 1


# A defect found in review, pinned by the behaviour that was wrong.
def test_tags_with_long_non_ascii_names_page_through(api: Api) -> None:
    names = ["\U0001d49c" * 63 + str(i) for i in range(3)]
    api.create(tags=names)
    first = api.get("/v1/tags", params={"limit": 1}).json()
    rest = api.get("/v1/tags", params={"limit": 2, "cursor": first["pageInfo"]["nextCursor"]})
    assert rest.status_code == 200, rest.text
    assert len(first["items"]) + len(rest.json()["items"]) == 3
