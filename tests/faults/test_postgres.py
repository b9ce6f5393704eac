"""Faults, PostgreSQL (harness.faults.postgres): clients create cards and start exports through
two API processes and a worker while every connection to the database is killed six times,
0.7 s apart (pg_terminate_backend; the shared server itself is never stopped), and while a
server of the test's own is stopped, cleanly and as in a crash, for two seconds and started
again. Every answer is a card, an export, or the error body of a passing fault (503 with
``retryAt``), never a 500 or a hang; every card acknowledged is stored once; writes are
acknowledged again at once after the fault (no request sent after it is refused: counted, not
timed, since a loaded machine stretches any bound); every card's processing and every export ends
within seconds of it (each export ready), though a job left for the sweeper would wait its
stale period (30 s here); and no 503 uses up a rate limit (a start of an export retried through
the outage is not refused for the day)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults.postgres import connections_killed, postgres_bin, server_restarted
from harness.servers import IN_CI
from tests.conftest import fresh_postgres_database

SETTLE_SECONDS = 15.0  # well inside the stale period, after which the sweeper would send a job again


@pytest.mark.postgres
def test_killed_connections_lose_no_write_and_every_job_ends_at_once(tmp_path: Path) -> None:
    url = fresh_postgres_database("cardvault_faults_pg", "the PostgreSQL fault tests")
    outcome = connections_killed(tmp_path, url, kills=6, settle_seconds=SETTLE_SECONDS)
    assert outcome.problems() == [], outcome.row()
    assert outcome.refused_after == [], outcome.row()


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_restarted_server_loses_no_write_and_every_job_ends_at_once(tmp_path: Path, mode: str) -> None:
    if postgres_bin() is None:
        message = "no PostgreSQL server programs (initdb, pg_ctl) for a server of the test's own"
        if IN_CI:
            pytest.fail(f"CI=true needs them: {message}")
        pytest.skip(message)
    outcome = server_restarted(tmp_path, mode=mode, settle_seconds=SETTLE_SECONDS)
    assert outcome.problems() == [], outcome.row()
    assert outcome.answers["503 SERVICE_UNAVAILABLE"] > 0, "no request met the outage"
    assert outcome.refused_after == [], outcome.row()
