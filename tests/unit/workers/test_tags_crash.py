"""A worker killed with SIGKILL in the middle of a tag operation: another worker finishes it and
every card is changed exactly once. Real processes, the Redis broker, PostgreSQL."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from sqlalchemy import func, select

from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.models import CardTag, TagOperation
from cardvault.domain.tags import operations
from tests.conftest import IN_CI, fresh_postgres_database, shared_redis_url

REDIS_URL = shared_redis_url()
CARDS = 3000
BIN = Path(sys.executable).parent


def _require_services() -> str:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        client.flushdb()
    except redis.ConnectionError as exc:
        message = f"crash test skipped: no Redis at {REDIS_URL}: {exc}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    finally:
        client.close()
        client.connection_pool.disconnect()
    return fresh_postgres_database("cardvault_crash", "crash test")


def _worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as output:
        return subprocess.Popen(
            [str(BIN / "cardvault"), "worker", "--processes", "1", "--threads", "2"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so the kill takes every process
        )


def _progress(db: Database, operation_id: str) -> TagOperation:
    with db.transaction(write=False) as session:
        operation = session.get(TagOperation, operation_id)
        assert operation is not None
        return operation


def test_a_killed_worker_leaves_the_operation_to_another_and_every_card_changes_once(tmp_path: Path) -> None:
    url = _require_services()
    db = open_database(url)
    db.migrate()
    with db.transaction() as session:
        account = accounts.create_account(session, name="crash").id
    for start in range(0, CARDS, 500):
        with db.transaction() as session:
            for i in range(start, start + 500):
                editing.add_card(session, account_id=account, content=f"card {i}", tags=["keep", "Old"])
    with db.transaction() as session:
        operation_id = operations.start_tag_operation(
            session, account_id=account, kind="rename", tag="old", to="New"
        ).id

    env = {
        **os.environ,
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_REDIS_URL": REDIS_URL,
        "CARDVAULT_DATA_DIR": str(tmp_path),
        "CARDVAULT_TAG_BATCH_SIZE": "10",
        "CARDVAULT_STALE_SECONDS": "2",
        "CARDVAULT_SWEEP_SECONDS": "0.5",
    }
    # No message is sent from here: the worker's sweeper re-sends every running operation when
    # it boots, which is also how a lost message is recovered.
    first = _worker(env, tmp_path / "first.log")

    deadline = time.monotonic() + 60
    while _progress(db, operation_id).processed < 300:
        assert time.monotonic() < deadline, (tmp_path / "first.log").read_text()
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    at_kill = _progress(db, operation_id)
    assert at_kill.status == "running" and at_kill.processed < CARDS

    second = _worker(env, tmp_path / "second.log")
    try:
        deadline = time.monotonic() + 90
        while _progress(db, operation_id).status == "running":
            assert time.monotonic() < deadline, (tmp_path / "second.log").read_text()
            time.sleep(0.1)
    finally:
        os.killpg(second.pid, signal.SIGTERM)
        second.wait(timeout=30)

    done = _progress(db, operation_id)
    assert (done.status, done.processed, done.changed) == ("completed", CARDS, CARDS)
    with db.transaction(write=False) as session:
        names = dict(
            session.execute(
                select(CardTag.name_key, func.count())
                .where(CardTag.account_id == account)
                .group_by(CardTag.name_key)
            ).all()
        )
    assert names == {"keep": CARDS, "new": CARDS}
    db.dispose()
    gc.collect()  # a leaked socket would warn here, inside this test, not at the end of the run
