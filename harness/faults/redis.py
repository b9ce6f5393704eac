"""Fault: the Redis server (Dramatiq's broker, the rate limits) killed and started again, empty,
while clients create link cards (each fetched by the link stage from a local page) and start tag
renames. Cards are written to the database, and the database is the truth: a message Redis
lost is sent again by the sweeper, so every card is processed and every operation completes
once Redis is back."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis as redis_client

from harness.faults import (
    Outcome,
    Traffic,
    cards_and_renames,
    pipeline_env,
    service,
    settle_pipeline,
    stored_once,
    until,
)
from harness.servers import free_port, page_server


class RedisProcess:
    """A Redis server of our own on a fixed loopback port, which can be killed and started
    again on the same port (empty: it keeps nothing on disk)."""

    def __init__(self, workdir: Path) -> None:
        found = shutil.which("redis-server")
        if found is None:
            raise RuntimeError("no redis-server on PATH")
        self._server = found
        self._workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            self._server,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self._process = subprocess.Popen(
            [*command, "--dir", str(self._workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        if not until(self._answers, 10, every=0.02):
            raise RuntimeError("redis-server did not start")

    def _answers(self) -> bool:
        try:
            return bool(redis_client.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis_client.ConnectionError:
            return False

    def kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None


def redis_restarted(
    workdir: Path,
    database_url: str,
    *,
    down_seconds: float = 3.0,
    clients: int = 4,
    pace: float = 0.02,
    stale_seconds: float = 5.0,
) -> Outcome:
    """Run the scenario on a fresh PostgreSQL database at ``database_url``."""
    outcome = Outcome("Redis killed and restarted empty (link cards, tag renames)")
    broker = RedisProcess(workdir)
    broker.start()
    try:
        with page_server() as pages:
            # A message lost with Redis is sent again once its stage is this stale.
            env = pipeline_env(workdir, database_url, broker.url, pages, stale_seconds=stale_seconds)
            with service(env, workdir) as (running, key):
                operations: list[str] = []
                request = cards_and_renames(pages, operations, rename_every=4)
                traffic = Traffic(
                    outcome, running.base, key, request, clients=clients, pace=pace,
                    expected=frozenset({"TAG_OPERATION_RUNNING"}),
                )  # fmt: skip
                with traffic:
                    time.sleep(1.0)  # the fault's own rhythm: traffic flowing before it
                    broker.kill()
                    time.sleep(down_seconds)
                    broker.start()
                    traffic.fault_over()
                    traffic.wait_for_recovery()
                    time.sleep(0.5)
                outcome.unsettled += settle_pipeline(outcome, running.base, key, operations)
    finally:
        broker.kill()
    outcome.lost = stored_once(database_url, outcome.acknowledged)
    return outcome
