"""Faults, PostgreSQL: four clients create cards through a real `cardvault serve` (two API
processes, a worker, Redis) while the server's database connections are killed eight times, 0.7 s apart
(`pg_terminate_backend`; the shared server itself is never stopped). Every answer is a card or
the error body of a passing fault (503 with `retryAt`), never a 500 or a hang, and every card
acknowledged is there afterwards, once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from bench.servers import running_server, server_env
from tests.conftest import fresh_postgres_database, shared_redis_url

CLIENTS = 4
KILLS = 8
KILL_EVERY_SECONDS = 0.7


@pytest.mark.postgres
def test_writes_through_killed_connections_lose_nothing_and_never_answer_500(tmp_path: Path) -> None:
    url = fresh_postgres_database("cardvault_faults", "the fault tests")
    env = {
        **server_env(tmp_path, url),
        "CARDVAULT_REDIS_URL": shared_redis_url(),
        "CARDVAULT_RATE_LIMIT_CARDS": "off",  # as many writes as the clients can send
    }
    with running_server(env, tmp_path, workers=2) as (base, key):
        done = threading.Event()
        statuses: Counter[int] = Counter()
        acknowledged: list[str] = []
        bad: list[str] = []
        lock = threading.Lock()

        def client(number: int) -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
                sent = 0
                while not done.is_set():
                    content = f"client {number} card {sent}"
                    sent += 1
                    response = http.post("/cards", json={"content": content})
                    with lock:
                        statuses[response.status_code] += 1
                        if response.status_code == 200:
                            acknowledged.append(content)
                        elif response.status_code != 503 or response.json().get("retryAt") is None:
                            bad.append(f"{response.status_code} {response.text[:300]}")

        clients = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in clients:
            thread.start()
        killer = create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            with killer.connect() as connection:
                for _ in range(KILLS):
                    time.sleep(KILL_EVERY_SECONDS)  # the fault's own rhythm, not a wait for a result
                    connection.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                        )
                    )
        finally:
            done.set()
            for thread in clients:
                thread.join(60)
        with killer.connect() as connection:
            stored = Counter(row[0] for row in connection.execute(text("SELECT content FROM cards")).all())
        killer.dispose()
    assert bad == [], f"answers other than a card or a passing 503: {bad[:5]} (all: {dict(statuses)})"
    assert statuses[200] > 0
    missing = [content for content in acknowledged if stored[content] != 1]
    assert missing == [], f"acknowledged cards not stored exactly once: {missing[:5]}"
