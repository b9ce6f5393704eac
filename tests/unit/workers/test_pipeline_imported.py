"""Stages of cards an import made (cardvault.domain.pipeline.table.IMPORTED_QUEUE): their own actors
on the imported queue, behind the stages of cards saved by hand (a card saved while 1,200 of
them wait runs first); the stages that follow stay there; those that fetch from the card's
host take the host's turns, one a second, waiting uncounted (HOST_PACED), while a card saved
by hand never waits; the sweeper leaves an import's backlog alone; a card queued again by hand
leaves the imported queue."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update

from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline import processing, table
from cardvault.workers import broker, embedded, pipeline, sweeper
from harness.servers import PageServer, page_server
from tests.conftest import Api
from tests.unit.handlers.test_imports import imported
from tests.unit.workers.stages.conftest import ARTICLE, bind, stages


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        yield server


def _link(db: Database, account_id: str, url: str, *, imported: bool) -> int:
    with db.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content=url).card
        assert processing.queue(session, card, imported=imported) == ("linkMetadata",)
        return card.pk


def _sent(queue: str, card_pk: int | None = None) -> list[tuple[str, list[object]]]:
    """The messages on a queue (for one card: the database holds other tests' cards too)."""
    messages = [json.loads(m) for m in broker.broker.queues.get(queue, _Empty()).queue]  # type: ignore[attr-defined]
    return [(m["actor_name"], m["args"]) for m in messages if card_pk is None or m["args"][0] == card_pk]


def _age(db: Database, pk: int, ms: int) -> None:
    """Make the card's stages' last sign of life ``ms`` old."""
    with db.transaction() as session:
        session.execute(update(CardStage).where(CardStage.card_pk == pk).values(updated_at=now_ms() - ms))


def _resent(db: Database, pk: int, stale_ms: int) -> set[str]:
    """The card's stages the sweeper would send again with this stale time."""
    with db.transaction(write=False) as session:
        found = processing.unsettled(
            session,
            older_than=now_ms() - stale_ms,
            imported_older_than=now_ms() - table.IMPORTED_STALE_MS,
            limit=100_000,
        )
    return {row.stage for row in found if row.card_pk == pk}


LINK_STAGES = set(table.stages_of_kind("link"))


class _Empty:
    queue: tuple[bytes, ...] = ()


@pytest.mark.parametrize("row", table.STAGES, ids=lambda row: row.name)
def test_each_stage_has_an_imported_actor_on_the_imported_queue_of_a_lower_priority(row: table.Stage) -> None:
    by_hand, imported = pipeline.ACTORS[row.name], pipeline.IMPORTED_ACTORS[row.name]
    assert broker.broker.get_actor(f"{row.actor_name}_imported") is imported
    assert imported.queue_name == table.IMPORTED_QUEUE != by_hand.queue_name
    assert imported.priority > by_hand.priority  # a worker runs the lower number first
    assert imported.options["time_limit"] == by_hand.options["time_limit"]
    assert imported.options["max_retries"] == by_hand.options["max_retries"]


def test_an_imported_cards_followers_stay_imported_and_a_refresh_by_hand_moves_it_back(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages, CARDVAULT_FETCH_LINKS="false")
    pk = _link(database, account_id, "https://news.example/a", imported=True)
    pipeline.send_stage(pk, "linkMetadata", imported=True)
    assert _sent(table.IMPORTED_QUEUE) == [("link_metadata_stage_imported", [pk])]
    broker.broker.flush_all()
    pipeline.IMPORTED_ACTORS["linkMetadata"](pk)  # skipped: fetching is off
    assert stages(database, pk)["linkMetadata"] == ("skipped", 1, "FETCHING_OFF")
    assert sorted(_sent(table.IMPORTED_QUEUE)) == [
        ("capture_stage_imported", [pk]),
        ("link_preview_stage_imported", [pk]),
    ]
    assert _sent("files") == [] and _sent("captures") == []
    broker.broker.flush_all()
    sweeper.resend_unsettled(
        broker.services_of(broker.broker), -1
    )  # waiting behind an import's backlog: not lost yet
    assert _sent(table.IMPORTED_QUEUE, pk) == []
    _age(database, pk, table.IMPORTED_STALE_MS + 1)
    sweeper.resend_unsettled(
        broker.services_of(broker.broker), 60_000
    )  # silent past that: lost, sent again to the imported queue
    assert {name for name, _ in _sent(table.IMPORTED_QUEUE, pk)} == {
        "capture_stage_imported",
        "link_preview_stage_imported",
    }  # (the AI waits for the capture, which sends it)
    broker.broker.flush_all()
    with database.transaction() as session:
        card = session.get(Card, pk)
        assert card is not None
        processing.queue(session, card)  # refreshed by hand
    with database.transaction(write=False) as session:
        rows = session.query(CardStage).filter(CardStage.card_pk == pk).all()
        assert rows and not any(row.imported for row in rows)


def test_an_imported_fetching_stage_waits_for_its_hosts_turn_uncounted_and_a_hand_saved_one_never_waits(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages)
    pages.routes["/tides"] = (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE)
    url = pages.url("/tides")
    host_turn = broker.services_of(broker.broker).pacer.turn(
        urlsplit(url).hostname or "", table.HOST_TURN_MS
    )  # another card's
    imported = _link(database, account_id, url, imported=True)
    pipeline.IMPORTED_ACTORS["linkMetadata"](imported)
    assert stages(database, imported)["linkMetadata"] == ("pending", 0, "HOST_PACED")
    ((actor, args, eta),) = [
        (m["actor_name"], m["args"], m["options"]["eta"])
        for m in (json.loads(raw) for raw in broker.broker.queues[f"{table.IMPORTED_QUEUE}.DQ"].queue)  # type: ignore[attr-defined]
    ]
    turn = host_turn + table.HOST_TURN_MS
    assert (actor, args) == ("link_metadata_stage_imported", [imported, turn])
    assert turn - 50 <= eta <= turn + 50  # sent again for its turn
    assert pages.hits == {}
    with database.transaction(write=False) as session:
        row = session.get(CardStage, (imported, "linkMetadata"))
        assert row is not None and row.updated_at >= turn  # its turn is its next sign of life
    assert _resent(database, imported, 500) == set()  # so the sweeper leaves it waiting
    by_hand = _link(database, account_id, url, imported=False)
    pipeline.ACTORS["linkMetadata"](by_hand)  # the host's turns are an import's matter
    assert stages(database, by_hand)["linkMetadata"] == ("completed", 1, None)
    pipeline.IMPORTED_ACTORS["linkMetadata"](imported, now_ms())  # its turn came
    assert stages(database, imported)["linkMetadata"] == ("completed", 1, None)
    assert pages.hits == {"/tides": 2}
    other = _link(database, account_id, url.replace("localhost", "127.0.0.1"), imported=True)
    pipeline.IMPORTED_ACTORS["linkMetadata"](other)  # another host's turns are its own
    assert stages(database, other)["linkMetadata"] == ("completed", 1, None)
    assert pages.hits == {"/tides": 3}
    broker.broker.flush_all()


def test_the_sweeper_waits_longer_for_an_imported_pending_stage_than_for_one_saved_by_hand(
    database: Database, account_id: str
) -> None:
    imported = _link(database, account_id, "https://news.example/imported", imported=True)
    by_hand = _link(database, account_id, "https://news.example/by-hand", imported=False)
    for pk in (imported, by_hand):
        _age(database, pk, 120_000)
    # (The stages after the page wait for it, which sends them: only the page's message is lost.)
    assert (_resent(database, imported, 60_000), _resent(database, by_hand, 60_000)) == (
        set(),
        {"linkMetadata"},
    )
    _age(database, imported, table.IMPORTED_STALE_MS + 1)
    assert _resent(database, imported, 60_000) == {"linkMetadata"}
    with database.transaction() as session:  # a running one whose worker went quiet: the stale time
        session.execute(
            update(CardStage)
            .where(CardStage.card_pk == imported)
            .values(state="running", updated_at=now_ms() - 120_000)
        )
    assert _resent(database, imported, 60_000) == LINK_STAGES


def test_a_card_saved_by_hand_overtakes_an_imports_backlog(api: Api, database: Database) -> None:
    if database.dialect != "sqlite":
        pytest.skip("the queues and priorities are the workers'; one database shows them")
    links = "".join(f'<DT><A HREF="https://backlog.example/{i}">Page {i}</A>\n' for i in range(300))
    data = f"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n{links}</DL><p>\n".encode()
    job = imported(api, data)  # its 300 cards' 1,200 stages queued behind it
    assert job["created"] == 300
    made = api.create(url="https://by-hand.example/")
    by_hand, saved_at = made["id"], made["createdAt"]  # its stage is sent as its card commits
    embedded.wait_until_idle(120)
    with database.transaction(write=False) as session:
        rows = session.execute(
            select(Card.id, CardStage.completed_at)
            .join(CardStage, CardStage.card_pk == Card.pk)
            .where(Card.account_id == api.account_id, CardStage.stage == "linkMetadata")
        ).all()
    done = {card_id: completed for card_id, completed in rows}
    imported_after = [at for card_id, at in done.items() if card_id != by_hand and at > done[by_hand]]
    overtaken = [at for card_id, at in done.items() if card_id != by_hand and saved_at <= at <= done[by_hand]]
    # Those a worker held already (its prefetch and its threads), and those that ended while the
    # card's transaction committed: a handful, where one queue would put the whole backlog first.
    assert len(overtaken) <= 30, len(overtaken)
    assert len(imported_after) >= 100, "the backlog was gone before the card was saved: nothing shown"
