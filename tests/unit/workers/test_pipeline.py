"""The pipeline's table and its workers agree: every row has its rules, a runner and an actor
with the row's queue and limits, every stage's rules, runner and actor has a row (a half-added stage
fails here), the actors of the release before one actor per stage pass their queued messages
on, a stage that finds the file store out of reach waits for it, uncounted, and one whose file
finds the disk full waits for room without spending its attempts."""

from __future__ import annotations

import dataclasses
import io
import json
import pkgutil
import time
from pathlib import Path

import pytest
from dramatiq import Message
from PIL import Image
from sqlalchemy import update

from cardvault.adapters.blobs import store_from_settings
from cardvault.bootstrap import bootstrap
from cardvault.domain import pipeline as domain_pipeline
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline import processing, status, table
from cardvault.domain.pipeline.rules import RULES
from cardvault.settings import Settings
from cardvault.workers import broker, embedded, pipeline, stages
from harness.faults.disk import Filler
from tests.conftest import app_env
from tests.unit.handlers.test_uploads import png

# Modules of cardvault.workers.stages that are not stages.
SHARED = {"pictures"}
# Modules of cardvault.domain.pipeline that are not a stage's rules.
NOT_STAGES = {"errors", "processing", "results", "rules", "status", "table"}
# The actors of the previous release, kept for the messages still queued for them.
LEGACY = {"run_stage", "run_transcript_stage"}


@pytest.mark.parametrize("row", table.STAGES, ids=lambda row: row.name)
def test_every_stage_in_the_table_has_its_rules_a_runner_and_an_actor(row: table.Stage) -> None:
    rules = RULES[row.name]
    assert rules.__name__ == f"cardvault.domain.pipeline.{row.module}"  # type: ignore[attr-defined]
    assert all(callable(getattr(rules, name, None)) for name in ("skipped_by", "apply"))
    assert isinstance(rules.BASIS, tuple) and isinstance(rules.WRITES_TAGS, bool)
    runner = pipeline.RUNNERS[row.name]
    assert runner.__module__ == f"cardvault.workers.stages.{row.module}" and runner.__name__ == "run"
    actor = broker.broker.get_actor(row.actor_name)
    assert actor is pipeline.ACTORS[row.name]
    assert (actor.queue_name, actor.options["time_limit"], actor.options["max_retries"]) == (
        row.queue,
        row.seconds * 1000,
        row.retries,
    )


def test_every_stage_module_and_stage_actor_is_in_the_table() -> None:
    assert embedded  # every actor of the workers is declared
    found = {info.name for info in pkgutil.iter_modules(stages.__path__)} - SHARED
    assert found == {row.module for row in table.STAGES}
    rules = {info.name for info in pkgutil.iter_modules(domain_pipeline.__path__)} - NOT_STAGES
    assert rules == {row.module for row in table.STAGES}
    assert set(RULES) == set(pipeline.RUNNERS) == {row.name for row in table.STAGES}
    on_stage_queues = {
        name
        for name, actor in broker.broker.actors.items()
        if actor.queue_name in table.queues() or name.endswith("_stage")
    }
    # A feed subscription's poll runs on the imported queue on purpose: what it saves goes
    # behind what people save by hand (docs/sharing.md).
    assert on_stage_queues - LEGACY - {"poll_subscription"} == {
        name for row in table.STAGES for name in (row.actor_name, f"{row.actor_name}_imported")
    }


LEGACY_QUEUES = [("run_stage", "files"), ("run_transcript_stage", "transcripts")]


@pytest.mark.parametrize(("legacy", "queue"), LEGACY_QUEUES)
def test_a_message_for_an_actor_of_the_previous_release_goes_on_to_the_stages_own_actor(
    legacy: str, queue: str
) -> None:
    broker.broker.flush_all()
    stage = "transcript" if queue == "transcripts" else "linkMetadata"
    broker.broker.get_actor(legacy)(7, stage)
    sent = [json.loads(m) for m in broker.broker.queues[queue].queue]  # type: ignore[attr-defined]
    assert [(m["actor_name"], m["args"]) for m in sent] == [(table.BY_NAME[stage].actor_name, [7])]
    broker.broker.flush_all()


def test_a_stage_the_table_does_not_name_is_logged_and_not_sent(caplog: pytest.LogCaptureFixture) -> None:
    broker.broker.flush_all()
    pipeline.send_stage(7, "retiredStage")  # a row a later release dropped: the sweeper goes on
    pipeline.send_stage(7, "ai")
    sent = [json.loads(m) for q in broker.broker.queues.values() for m in q.queue]  # type: ignore[attr-defined]
    assert [(m["actor_name"], m["args"]) for m in sent] == [(table.BY_NAME["ai"].actor_name, [7])]
    assert "retiredStage" in caplog.text
    broker.broker.flush_all()


def test_a_stage_that_finds_the_file_store_out_of_reach_waits_for_it_and_never_fails_for_it(
    database: Database, account_id: str, tmp_path: Path, unreachable_s3_env: dict[str, str]
) -> None:
    local = Settings.from_env(app_env(tmp_path, database))
    store = store_from_settings(local)
    key = f"accounts/{account_id}/files/up/a.png"
    store.put(key, png(30, 20), content_type="image/png")
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="").card
        card.type, card.file_object, card.file_name, card.file_size = "image", key, "a.png", 1
        card.mime_type = "image/png"
        assert processing.queue(session, card) == ("renditions",)
        pk = card.pk
    bootstrap(Settings.from_env({**app_env(tmp_path, database), **unreachable_s3_env}), database=database)
    broker.broker.flush_all()
    for _ in range(table.MAX_ATTEMPTS + 1):  # more attempts than a failing stage has
        pipeline.run(broker.services_of(broker.broker), pk, "renditions")
    assert _stage(database, pk) == ("pending", 0, "STORAGE_UNAVAILABLE")
    sent = [json.loads(m) for m in broker.broker.queues["files.DQ"].queue]  # type: ignore[attr-defined]
    assert {(m["actor_name"], m["options"]["eta"] > 0) for m in sent} == {
        (table.BY_NAME["renditions"].actor_name, True)
    }
    bootstrap(local, database=database, blobs=store)  # the store is back
    broker.broker.flush_all()
    pipeline.run(broker.services_of(broker.broker), pk, "renditions")
    assert _stage(database, pk) == ("completed", 1, None)


def _stage(database: Database, pk: int, name: str = "renditions") -> tuple[str, int, str | None]:
    with database.transaction(write=False) as session:
        (row,) = [r for r in status.stages_of(session, [pk])[pk] if r.stage == name]
        return row.state, row.attempts, row.error_code


def _image_card(db: Database, account_id: str, *, created_at: int | None = None) -> int:
    """An image card whose ``renditions`` stage is pending."""
    out = io.BytesIO()
    Image.new("RGB", (300, 200), (20, 90, 160)).save(out, "PNG")
    key = f"accounts/{account_id}/files/test/photo.png"
    broker.services_of(broker.broker).blobs.put(key, out.getvalue(), content_type="image/png")
    with db.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="", card_type="text").card
        session.flush()
        values = {"type": "image", "file_object": key, "file_kind": "image", "mime_type": "image/png"}
        if created_at is not None:
            values["created_at"] = created_at
        session.execute(update(Card).where(Card.pk == card.pk).values(**values))
        session.flush()
        session.expire(card)
        assert processing.queue(session, card) == ("renditions",)
        return card.pk


def _renditions(db: Database, pk: int) -> tuple[str, int, str | None]:
    with db.transaction(write=False) as session:
        row = session.get(CardStage, (pk, "renditions"))
        assert row is not None
        return row.state, row.attempts, row.error_code


def test_a_stage_finding_the_disk_full_waits_for_room_without_spending_its_attempts(
    blobs_disk: Path, database: Database, settings: Settings, account_id: str
) -> None:
    bootstrap(dataclasses.replace(settings, full_disk_retry_seconds=7.0), database=database)
    broker.broker.flush_all()
    pk = _image_card(database, account_id)
    sent_at = time.time() * 1000
    with Filler(blobs_disk):
        for _ in range(table.MAX_ATTEMPTS + 1):
            pipeline.ACTORS["renditions"](pk)  # (sent again 7 s later, or by the sweeper)
            assert _renditions(database, pk) == ("pending", 0, "STORAGE_FULL")
    delayed = broker.broker.queues["files.DQ"]  # type: ignore[attr-defined]
    assert delayed.qsize() == table.MAX_ATTEMPTS + 1
    etas = [Message.decode(raw).options["eta"] for raw in list(delayed.queue)]
    assert all(sent_at + 7000 <= eta <= time.time() * 1000 + 7000 for eta in etas), (sent_at, etas)
    assert list((blobs_disk / "tmp").iterdir()) == []
    pipeline.ACTORS["renditions"](pk)
    assert _renditions(database, pk) == ("completed", 1, None)
    broker.broker.flush_all()


def test_a_stage_of_a_card_older_than_the_wait_counts_its_attempts_and_fails_storage_full(
    blobs_disk: Path, database: Database, settings: Settings, account_id: str
) -> None:
    bootstrap(settings, database=database)
    broker.broker.flush_all()
    pk = _image_card(database, account_id, created_at=1)
    with Filler(blobs_disk):
        for attempt in range(1, table.MAX_ATTEMPTS + 1):
            with pytest.raises(OSError, match="No space"):  # Dramatiq retries it with backoff
                pipeline.ACTORS["renditions"](pk)
            assert _renditions(database, pk) == ("pending", attempt, "STORAGE_FULL")
        pipeline.ACTORS["renditions"](pk)
    assert _renditions(database, pk) == ("failed", table.MAX_ATTEMPTS, "STORAGE_FULL")
    broker.broker.flush_all()
