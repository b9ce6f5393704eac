"""Faults, Redis: the broker and rate-limit store killed for three seconds and started again
empty while clients create link cards and start tag renames through two API processes and a
worker. Every write is answered (Redis is not where cards are kept), every acknowledged card is
stored once, and once Redis is back every card is processed and every operation completes: the
sweeper sends again what Redis lost (harness.faults.redis)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults.redis import redis_restarted
from tests.conftest import fresh_postgres_database


@pytest.mark.postgres
def test_redis_killed_and_restarted_loses_no_write_and_every_job_settles(tmp_path: Path) -> None:
    url = fresh_postgres_database("cardvault_faults_redis", "the Redis fault test")
    outcome = redis_restarted(tmp_path, url, clients=2, pace=0.05)
    assert outcome.problems() == [], outcome.row()
    assert outcome.answers["202"] >= 1, "no tag operation was started"
