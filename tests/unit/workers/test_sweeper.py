"""The sweeper: when a worker boots it re-sends every running tag operation, export and
unsettled stage and starts the purges; after that, each pass re-sends only what went stale; a
pass that fails is logged (in one line when the database cannot be reached) and the next one
goes on. Each test runs the sweeper's own thread on the Dramatiq stub broker and waits for its
``swept`` event, over a database of this module's own (so a boot pass sends only what these
tests made)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import dramatiq
import pytest
from sqlalchemy import select, update

from cardvault.bootstrap import bootstrap
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.models import CardStage, ExportJob, TagOperation
from cardvault.domain.pipeline import processing
from cardvault.domain.portability.exports import jobs as exports
from cardvault.domain.tags import operations
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers.sweeper import Sweeper
from tests.conftest import BACKENDS, app_env, migrated_database

PURGES = {
    "purge_trash",
    "forget_idempotency_keys",
    "forget_old_uploads",
    "delete_doomed_objects",
    "expire_exports",
    "forget_ended_credentials",
}
AGO = 120_000  # two minutes: past the minute after which a heartbeat is stale
PASS_SECONDS = 10.0  # how long a test waits for a pass at most (one takes milliseconds)


@pytest.fixture(scope="module", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with migrated_database(request.param, tmp_path_factory, "cardvault_sweeper") as db:
        yield db


@pytest.fixture
def sweeping(tmp_path: Path, database: Database) -> Iterator[Callable[[float], Sweeper]]:
    """Start a sweeper as a booting worker would, passing every ``sweep_seconds``; stop it."""
    started: list[Sweeper] = []

    def start(sweep_seconds: float) -> Sweeper:
        env = {**app_env(tmp_path, database), "CARDVAULT_SWEEP_SECONDS": str(sweep_seconds)}
        bootstrap(Settings.from_env(env), database=database)
        broker.broker.flush_all()
        sweeper = Sweeper()
        sweeper.after_worker_boot(broker.broker, None)  # type: ignore[arg-type]
        started.append(sweeper)
        return sweeper

    yield start
    for sweeper in started:
        sweeper.before_worker_shutdown(broker.broker, None)  # type: ignore[arg-type]
    broker.broker.flush_all()


def wait_for_passes(sweeper: Sweeper, count: int = 1) -> None:
    """Wait until ``count`` passes have ended since now (a pass under way counts only if it ends
    after the call, so ``count=2`` means a whole pass ran after the call)."""
    for _ in range(count):
        sweeper.swept.clear()
        assert sweeper.swept.wait(PASS_SECONDS), "the sweeper made no pass"


def sent() -> list[tuple[str, tuple[object, ...]]]:
    """The messages on the stub broker's queues (actor, arguments), taken off them."""
    messages = []
    for name, queue in list(broker.broker.queues.items()):  # type: ignore[attr-defined]
        while not queue.empty():
            message = dramatiq.Message.decode(queue.get_nowait())
            messages.append((message.actor_name, tuple(message.args)))
            assert message.queue_name == name
    return messages


def start_tag_delete(database: Database, account_id: str, heartbeat_ago_ms: int) -> str:
    with database.transaction() as session:
        editing.add_card(session, account_id=account_id, tags=["old"])
        operation_id = operations.start_tag_operation(
            session, account_id=account_id, kind="delete", tag="old"
        ).id
        session.execute(
            update(TagOperation)
            .where(TagOperation.id == operation_id)
            .values(heartbeat_at=now_ms() - heartbeat_ago_ms)
        )
        return operation_id


def start_export(database: Database, account_id: str, heartbeat_ago_ms: int) -> str:
    with database.transaction() as session:
        job_id = exports.start_export(session, account_id=account_id).id
        session.execute(
            update(ExportJob).where(ExportJob.id == job_id).values(heartbeat_at=now_ms() - heartbeat_ago_ms)
        )
        return job_id


def queue_ai_stage(database: Database, account_id: str, updated_ago_ms: int) -> int:
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="Some words to summarise.").card
        processing.queue(session, card)
        session.execute(
            update(CardStage).where(CardStage.card_pk == card.pk).values(updated_at=now_ms() - updated_ago_ms)
        )
        return card.pk


def queue_sent_at(card_pk: int, ready_at: int) -> None:
    """Put an AI stage's message on its queue as if sent at ``ready_at`` (ms)."""
    queue = broker.broker.queues["files"]  # type: ignore[attr-defined]
    message = broker.broker.get_actor("ai_stage").message(card_pk)
    queue.put(message.copy(options={**message.options, "ready_at": ready_at}).encode())


def test_a_booting_worker_resends_everything_under_way_and_starts_the_purges(
    sweeping: Callable[[float], Sweeper], database: Database, new_account: Callable[[], str]
) -> None:
    # Under way a second ago: not stale by the minute, but a restarted process lost its queue.
    operation_id = start_tag_delete(database, new_account(), 1_000)
    job_id = start_export(database, new_account(), 1_000)
    card_pk = queue_ai_stage(database, new_account(), 1_000)
    sweeper = sweeping(3600)
    assert sweeper.swept.wait(PASS_SECONDS)
    messages = sent()
    assert ("run_tag_operation", (operation_id,)) in messages
    assert ("run_export", (job_id,)) in messages
    assert ("ai_stage", (card_pk,)) in messages
    assert sorted(actor for actor, _ in messages if actor in PURGES) == sorted(PURGES)


def test_later_passes_resend_only_what_went_stale_and_purge_no_more(
    sweeping: Callable[[float], Sweeper], database: Database, new_account: Callable[[], str]
) -> None:
    sweeper = sweeping(0.05)
    wait_for_passes(sweeper)
    sent()  # what the boot pass sent
    fresh = (
        start_tag_delete(database, new_account(), 1_000),
        start_export(database, new_account(), 1_000),
        queue_ai_stage(database, new_account(), 1_000),
    )
    stale = (
        start_tag_delete(database, new_account(), AGO),
        start_export(database, new_account(), AGO),
        queue_ai_stage(database, new_account(), AGO),
    )
    wait_for_passes(sweeper, 2)
    messages = set(sent())
    assert {
        ("run_tag_operation", (stale[0],)),
        ("run_export", (stale[1],)),
        ("ai_stage", (stale[2],)),
    } <= messages
    resent = {args[0] for _, args in messages}
    assert not resent & set(fresh)
    assert not {actor for actor, _ in messages} & PURGES  # every ten minutes, not every pass


@pytest.mark.parametrize(
    ("broken", "level", "message"),
    [
        ("no tables", logging.ERROR, "sweeping failed; trying again later"),
        (
            "unreachable",
            logging.WARNING,
            "sweeping skipped: the database cannot be reached; trying again later",
        ),
    ],
)
def test_a_failing_pass_is_logged_and_the_next_one_goes_on(
    sweeping: Callable[[float], Sweeper],
    database: Database,
    new_account: Callable[[], str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    broken: str,
    level: int,
    message: str,
) -> None:
    operation_id = start_tag_delete(database, new_account(), AGO)
    settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_SWEEP_SECONDS": "0.05"})
    url = (
        f"sqlite:///{tmp_path / 'empty.db'}"
        if broken == "no tables"
        else "postgresql+psycopg://nobody@127.0.0.1:1/none"
    )
    failing = open_database(url)
    sweeper = sweeping(0.05)
    wait_for_passes(sweeper)
    sent()
    with caplog.at_level(logging.WARNING, logger="cardvault.sweeper"):
        bootstrap(settings, database=failing)
        wait_for_passes(sweeper, 2)  # ended, though it failed: wait_until_idle is not kept waiting
    logged = [r for r in caplog.records if r.name == "cardvault.sweeper"]
    assert logged and all((r.levelno, r.getMessage()) == (level, message) for r in logged)
    # An outage is a passing fault: one line a pass, not a traceback.
    assert all(bool(r.exc_info) == (broken == "no tables") for r in logged)
    sent()
    bootstrap(settings, database=database)
    wait_for_passes(sweeper, 2)
    assert ("run_tag_operation", (operation_id,)) in sent()
    failing.dispose()


def test_a_stopped_sweeper_leaves_no_thread_behind(sweeping: Callable[[float], Sweeper]) -> None:
    before = set(threading.enumerate())
    sweeper = sweeping(0.05)
    started = set(threading.enumerate()) - before
    assert sorted(t.name for t in started) == ["cardvault-heartbeat", "cardvault-sweeper"]
    assert all(t.daemon for t in started)
    wait_for_passes(sweeper)
    sweeper.before_worker_shutdown(broker.broker, None)  # type: ignore[arg-type]
    assert not any(t.is_alive() for t in started)


def test_an_export_no_worker_holds_is_sent_again_once_per_stale_period(
    sweeping: Callable[[float], Sweeper], database: Database, new_account: Callable[[], str]
) -> None:
    # Waiting for a worker's one-export turn looks like a lost message too: sent again once.
    sweeper = sweeping(0.05)
    wait_for_passes(sweeper)
    sent()
    job_id = start_export(database, new_account(), AGO)
    wait_for_passes(sweeper, 2)
    assert sent().count(("run_export", (job_id,))) == 1
    wait_for_passes(sweeper, 3)
    assert ("run_export", (job_id,)) not in sent()


def test_a_stage_waiting_for_the_one_it_follows_is_not_sent_again_until_that_one_settles(
    sweeping: Callable[[float], Sweeper], database: Database, new_account: Callable[[], str]
) -> None:
    # A link's preview, capture and AI wait for its page (the page's settle sends them): with
    # no sign of life for the stale time they lost no message, and only the page is sent again.
    sweeper = sweeping(0.05)
    wait_for_passes(sweeper)
    sent()
    with database.transaction() as session:
        card = editing.add_card(session, account_id=new_account(), content="https://example.com/a").card
        processing.queue(session, card)
        pk = card.pk
        stages = set(session.scalars(select(CardStage.stage).where(CardStage.card_pk == pk)))
        session.execute(update(CardStage).where(CardStage.card_pk == pk).values(updated_at=now_ms() - AGO))
    assert {"linkMetadata", "linkPreview", "capture", "ai"} <= stages
    wait_for_passes(sweeper, 2)
    assert {actor for actor, args in sent() if args == (pk,)} == {"link_metadata_stage"}
    # The page settled and its worker died before sending what follows: those are sent again,
    # the AI (it waits for the capture) not yet.
    with database.transaction() as session:
        session.execute(
            update(CardStage)
            .where(CardStage.card_pk == pk, CardStage.stage == "linkMetadata")
            .values(state="completed", lease=None)
        )
        session.execute(update(CardStage).where(CardStage.card_pk == pk).values(updated_at=now_ms() - AGO))
    wait_for_passes(sweeper, 2)
    assert {actor for actor, args in sent() if args == (pk,)} == {"link_preview_stage", "capture_stage"}


def test_a_pending_stage_whose_message_still_waits_in_its_queue_is_not_sent_again(
    sweeping: Callable[[float], Sweeper], database: Database, new_account: Callable[[], str]
) -> None:
    # Behind a long queue a stage is quiet but lost nothing: sent again only once its queue
    # has moved past it (a worker took its message, and died) or is empty.
    sweeper = sweeping(0.05)
    wait_for_passes(sweeper)
    sent()
    pk = queue_ai_stage(database, new_account(), 0)
    queued_at = now_ms() - AGO
    queue_sent_at(pk, queued_at - 1_000)  # its message
    with database.transaction() as session:
        session.execute(update(CardStage).where(CardStage.card_pk == pk).values(updated_at=queued_at))
    wait_for_passes(sweeper, 2)
    assert sent().count(("ai_stage", (pk,))) == 1, "sent again while its message waits"
    # Its message was taken (by sent()), and the stage stays quiet another stale time.
    with database.transaction() as session:
        session.execute(update(CardStage).where(CardStage.card_pk == pk).values(updated_at=queued_at))
    wait_for_passes(sweeper, 2)
    assert ("ai_stage", (pk,)) in sent()
    # A running stage's worker died: it is sent again, whatever its queue holds.
    other = queue_ai_stage(database, new_account(), 0)
    queue_sent_at(other, queued_at - 1_000)
    with database.transaction() as session:
        session.execute(
            update(CardStage)
            .where(CardStage.card_pk == pk)
            .values(state="running", lease="x" * 32, updated_at=queued_at)
        )
    wait_for_passes(sweeper, 2)
    assert ("ai_stage", (pk,)) in sent()
