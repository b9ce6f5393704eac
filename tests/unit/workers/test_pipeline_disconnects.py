"""A stage whose connection to the database was lost as it was taken (in a statement, or in
COMMIT, when it may have been saved) is taken again in the same message, under the same lease;
one whose result cannot be recorded is recorded once the database answers again (the worker
waits for it), never left running under a lease nobody holds: Dramatiq's retry would find the
stage taken and do nothing, and the card would wait minutes, until another worker may take the
stage over. PostgreSQL only: its connections are cut by a trigger
(tests.conftest.connections_cut)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardvault.bootstrap import bootstrap
from cardvault.domain.cards import editing
from cardvault.domain.db import ATTEMPTS, Database
from cardvault.domain.models import CardStage
from cardvault.domain.pipeline import processing
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers.pipeline import ACTORS
from tests.conftest import app_env, connections_cut


def _text_card(tmp_path: Path, database: Database, account_id: str, *, ai: str) -> int:
    if database.dialect != "postgresql":
        pytest.skip("connections that can be cut are PostgreSQL's")
    bootstrap(Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_AI": ai}), database=database)
    broker.broker.flush_all()
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="Tides turn twice a day.").card
        assert processing.queue(session, card) == ("ai",)
        return card.pk


def _stage(database: Database, pk: int) -> tuple[str, int, str | None]:
    with database.transaction(write=False) as session:
        row = session.get(CardStage, (pk, "ai"))
        assert row is not None
        return row.state, row.attempts, row.error_code


@pytest.mark.parametrize("at_commit", [False, True], ids=["in-a-statement", "in-commit"])
def test_a_stage_whose_connection_was_lost_as_it_was_taken_runs_in_the_same_message(
    tmp_path: Path, database: Database, account_id: str, at_commit: bool
) -> None:
    pk = _text_card(tmp_path, database, account_id, ai="false")
    taking = f"NEW.card_pk = {pk} AND NEW.state = 'running'"
    with connections_cut(database, table="card_stages", times=1, when=taking, at_commit=at_commit):
        ACTORS["ai"](pk)
    assert _stage(database, pk) == ("skipped", 1, "AI_OFF")


def test_a_start_run_again_under_its_own_lease_finds_the_stage_taken_by_it(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    pk = _text_card(tmp_path, database, account_id, ai="false")
    runs = []
    for lease in ("mine", "mine", "another"):  # as after a COMMIT that was lost, yet saved
        with database.transaction() as session:
            taken = processing.start(session, card_pk=pk, stage="ai", stale_before=0, lease=lease)
            runs.append(None if taken is None else (taken.lease, taken.attempts))
    assert runs == [("mine", 1), ("mine", 1), None]


@pytest.mark.parametrize("at_commit", [False, True], ids=["in-a-statement", "in-commit"])
@pytest.mark.parametrize(
    ("ai", "recorded"), [("true", ("completed", None)), ("false", ("skipped", "AI_OFF"))]
)
def test_a_result_whose_connection_was_lost_is_recorded_once_the_database_answers(
    tmp_path: Path,
    database: Database,
    account_id: str,
    ai: str,
    recorded: tuple[str, str | None],
    at_commit: bool,
) -> None:
    pk = _text_card(tmp_path, database, account_id, ai=ai)
    # More lost connections than Database.run's quick attempts: the worker must wait them out.
    recording = f"NEW.card_pk = {pk} AND NEW.lease IS NULL"
    with connections_cut(
        database, table="card_stages", times=ATTEMPTS + 1, when=recording, at_commit=at_commit
    ):
        ACTORS["ai"](pk)
    assert _stage(database, pk) == (recorded[0], 1, recorded[1])
