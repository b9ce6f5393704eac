"""Faults, processes killed: 50 SIGKILLs at random moments, in turn of one of the two API processes
and of the worker's process (restarted by a supervisor, as systemd would), while clients create
link cards and start tag renames. Only a request whose process died under it loses its
connection; every acknowledged card is stored once, and every card and operation a killed
worker held is taken over and finished (harness.faults.kills)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults.kills import processes_killed
from tests.conftest import fresh_postgres_database


@pytest.mark.postgres
def test_fifty_kills_lose_no_write_and_every_job_settles(tmp_path: Path) -> None:
    url = fresh_postgres_database("cardvault_faults_kills", "the process-kill fault test")
    outcome = processes_killed(tmp_path, url, kills=50)
    assert outcome.problems() == [], outcome.row()
    assert outcome.answers["202"] >= 1, "no tag operation was started"
    assert outcome.facts == {"api_killed": 25, "worker_killed": 25}  # in turn, not by chance
