"""Fault: the Redis server (Dramatiq's broker, the rate limits) killed and started again, empty,
while clients create link cards (each fetched by the link stage from a local page) and start tag
renames. Cards are written to the database, and the database is the truth: a message Redis
lost is sent again by the sweeper, so every card is processed and every operation completes
once Redis is back."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import httpx
import redis as redis_client
from sqlalchemy import create_engine, text

from bench.faults import Outcome, Traffic, service, until
from bench.servers import free_port, page_server, server_env

PAGE = b"<!doctype html><html><head><title>A page that stays</title></head><body><p>Words.</p></body></html>"


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
            pages.routes["/page"] = (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE)
            env = {
                **server_env(workdir, database_url),
                "CARDVAULT_REDIS_URL": broker.url,
                "CARDVAULT_FETCH_LINKS": "true",
                "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
                "CARDVAULT_FETCH_PORTS": str(pages.port),
                "CARDVAULT_RATE_LIMIT_CARDS": "off",
                "CARDVAULT_RATE_LIMIT_TAG_OPERATIONS": "off",
                # A message lost with Redis is sent again once its stage is this stale.
                "CARDVAULT_STALE_SECONDS": str(stale_seconds),
                "CARDVAULT_SWEEP_SECONDS": "0.5",
            }
            with service(env, workdir) as (running, key):
                operations: list[str] = []

                def request(http: httpx.Client, number: int, count: int) -> tuple[str | None, httpx.Response]:
                    if number == 0 and count % 4 == 3:
                        response = http.post(
                            "/tags/rename", json={"from": f"t{count - 3}", "to": f"renamed-{count}"}
                        )
                        if response.status_code == 202:
                            operations.append(response.json()["id"])
                        return None, response
                    mark = f"{number}-{count}"
                    body = {"content": pages.url(f"/page?card={mark}"), "tags": [f"t{count}"]}
                    return mark, http.post("/cards", json=body)

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
                over = time.monotonic()
                with httpx.Client(base_url=running.base, headers={"Authorization": f"Bearer {key}"}) as http:

                    def settled() -> bool:
                        busy = [
                            http.get("/cards", params={"processingState": state, "limit": 1}).json()["items"]
                            for state in ("pending", "running")
                        ]
                        ended = [
                            http.get(f"/tags/operations/{op}").json()["status"] in {"completed", "failed"}
                            for op in operations
                        ]
                        return not any(busy) and all(ended)

                    if until(settled, 60, every=0.2):
                        outcome.settle_seconds = time.monotonic() - over
                    else:
                        outcome.unsettled.append(
                            "cards still processing or operations still running after 60 s"
                        )
                    failed = http.get("/cards", params={"processingState": "failed", "limit": 5}).json()[
                        "items"
                    ]
                    outcome.unsettled += [f"card {card['id']} failed processing" for card in failed]
    finally:
        broker.kill()
    outcome.lost = _lost(database_url, outcome.acknowledged)
    return outcome


def _lost(database_url: str, acknowledged: list[str]) -> list[str]:
    """The acknowledged cards not stored exactly once."""
    engine = create_engine(database_url)
    with engine.connect() as connection:
        stored = Counter(
            row[0].rsplit("card=", 1)[-1]
            for row in connection.execute(text("SELECT content FROM cards")).all()
        )
    engine.dispose()
    return [mark for mark in acknowledged if stored[mark] != 1]
