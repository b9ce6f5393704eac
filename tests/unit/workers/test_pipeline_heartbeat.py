"""A stage's heartbeat: a worker beats for every attempt it runs (the sweeper's heartbeat thread,
four times per stale time), so a stage whose worker was killed is taken over once it has had no
sign of life for CARDVAULT_STALE_SECONDS, not after the stage's whole time limit (4.5 minutes
for a link), while a live worker's slow attempt is never taken from it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import CardStage
from cardvault.domain.pipeline import processing
from cardvault.workers import broker
from cardvault.workers.pipeline import ACTORS
from cardvault.workers.sweeper import Sweeper
from harness.servers import PageServer, page_server
from tests.unit.workers.stages.conftest import ARTICLE, bind, link


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        yield server


def _row(database: Database, pk: int) -> CardStage:
    with database.transaction(write=False) as session:
        row = session.get(CardStage, (pk, "linkMetadata"))
        assert row is not None
        return row


def _taken_by_a_worker_that_died(database: Database, pk: int, *, last_sign_ms_ago: int) -> str:
    with database.transaction() as session:
        taken = processing.start(session, card_pk=pk, stage="linkMetadata", stale_before=0)
        assert isinstance(taken, processing.Taken)
        session.execute(
            update(CardStage)
            .where(CardStage.card_pk == pk, CardStage.stage == "linkMetadata")
            .values(updated_at=now_ms() - last_sign_ms_ago)
        )
        return taken.lease


def test_a_dead_workers_stage_is_taken_over_after_the_stale_time_and_a_live_ones_is_not(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages, CARDVAULT_STALE_SECONDS="5")
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    dead = link(database, account_id, pages.url("/tides"))
    live = link(database, account_id, pages.url("/tides"))
    _taken_by_a_worker_that_died(database, dead, last_sign_ms_ago=6_000)  # far within 4.5 minutes
    live_lease = _taken_by_a_worker_that_died(database, live, last_sign_ms_ago=1_000)
    ACTORS["linkMetadata"](dead)
    ACTORS["linkMetadata"](live)
    assert (_row(database, dead).state, _row(database, dead).attempts) == ("completed", 2)
    assert (_row(database, live).state, _row(database, live).lease) == ("running", live_lease)
    assert pages.hits == {"/tides": 1}


def test_a_live_workers_slow_attempt_beats_and_is_not_taken_from_it(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages, CARDVAULT_STALE_SECONDS="0.2", CARDVAULT_SWEEP_SECONDS="3600")
    release = threading.Event()

    def slow_page() -> tuple[int, dict[str, str], bytes]:
        # Released once the other worker has tried; answered within the fetcher's 5 s read time
        # whatever the load (CI saw FETCH_TIMEOUT when the release came later).
        release.wait(4)
        return 200, {"Content-Type": "text/html"}, ARTICLE

    pages.routes["/slow"] = slow_page
    pk = link(database, account_id, pages.url("/slow"))
    sweeper = Sweeper()
    sweeper.after_worker_boot(broker.broker, None)  # type: ignore[arg-type]
    attempt = threading.Thread(target=ACTORS["linkMetadata"], args=(pk,))
    try:
        attempt.start()
        deadline = time.monotonic() + 10
        while pages.hits.get("/slow") != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = _row(database, pk)
        assert started.state == "running"
        time.sleep(0.6)  # three stale times: a worker that did not beat would look dead by now
        beaten = _row(database, pk)
        assert beaten.updated_at > started.updated_at
        ACTORS["linkMetadata"](pk)  # the message sent again, taken by another worker
        release.set()
        attempt.join(10)
    finally:
        release.set()
        sweeper.before_worker_shutdown(broker.broker, None)  # type: ignore[arg-type]
    done = _row(database, pk)
    assert (done.state, done.attempts) == ("completed", 1)
    assert pages.hits == {"/slow": 1}
