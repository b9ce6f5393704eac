"""Tag rename, merge and delete over 10,000 and 100,000 cards on PostgreSQL, from the POST to
`completed` (API process + one worker process on Redis, as in production), against the single
SQL statement that makes the same change (tags and updatedAt), in the same run on the same data.
While each operation runs, a reader lists and reads cards of the same account; its p99 is
compared with its idle p99.

    .venv/bin/python -m bench.bench_tags [--cards 10000 100000] [--batch-size 500]

Every card carries two copies of each tag family (one for the baseline, one for the
operation), so both change the same number of rows of the same shape.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time

import httpx
import redis
from sqlalchemy import create_engine, text

from cardvault.domain.auth import accounts, keys
from cardvault.domain.clock import now_ms
from cardvault.domain.database import open_database
from cardvault.domain.tags import counts
from harness.servers import BIN, POSTGRES, ROOT, free_port

REDIS = os.environ.get("CARDVAULT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")

SEED_TAGS = """
INSERT INTO card_tags (card_pk, kind, name_key, name, position, account_id, words, card_created_at)
SELECT c.pk, 'user', t.name, t.name, t.position, c.account_id, ' ' || t.name || ' ', c.created_at
FROM cards c CROSS JOIN (VALUES ('alpha1', 0), ('alpha2', 1), ('beta1', 2), ('beta2', 3),
     ('delta1', 4), ('delta2', 5)) AS t(name, position)
WHERE c.account_id = :a;
INSERT INTO card_tags (card_pk, kind, name_key, name, position, account_id, words, card_created_at)
SELECT c.pk, 'user', t.name, t.name, t.position, c.account_id, ' ' || t.name || ' ', c.created_at
FROM cards c CROSS JOIN (VALUES ('gamma1', 6), ('gamma2', 7)) AS t(name, position)
WHERE c.account_id = :a AND c.pk % 2 = 0;
INSERT INTO card_tags (card_pk, kind, name_key, name, position, account_id, words, card_created_at)
SELECT c.pk, 'user', 'warm', 'warm', 8, c.account_id, ' warm ', c.created_at
FROM cards c WHERE c.account_id = :a AND c.pk % 1000 = 0;
"""

BASELINES = {
    "rename": """
        WITH t AS (UPDATE card_tags SET name = 'Alpha-1', name_key = 'alpha-1', words = ' alpha 1 '
                   WHERE account_id = :a AND name_key = 'alpha1' RETURNING card_pk)
        UPDATE cards SET updated_at = :now WHERE pk IN (SELECT card_pk FROM t)""",
    "merge": """
        WITH d AS (DELETE FROM card_tags ct WHERE ct.account_id = :a AND ct.name_key = 'beta1'
                   AND EXISTS (SELECT 1 FROM card_tags o WHERE o.card_pk = ct.card_pk
                               AND o.kind = ct.kind AND o.name_key = 'gamma1')
                   RETURNING ct.card_pk),
             u AS (UPDATE card_tags SET name = 'gamma1', name_key = 'gamma1', words = ' gamma1 '
                   WHERE account_id = :a AND name_key = 'beta1'
                   AND card_pk NOT IN (SELECT card_pk FROM d) RETURNING card_pk)
        UPDATE cards SET updated_at = :now
        WHERE pk IN (SELECT card_pk FROM d UNION ALL SELECT card_pk FROM u)""",
    "delete": """
        WITH d AS (DELETE FROM card_tags WHERE account_id = :a AND name_key = 'delta1' RETURNING card_pk)
        UPDATE cards SET updated_at = :now WHERE pk IN (SELECT card_pk FROM d)""",
}
OPERATIONS = {
    "rename": ("/v1/tags/rename", {"from": "alpha2", "to": "Alpha-2"}),
    "merge": ("/v1/tags/merge", {"from": "beta2", "into": "gamma2"}),
    "delete": ("/v1/tags/delete", {"tag": "delta2"}),
    "warm-up": ("/v1/tags/delete", {"tag": "warm"}),
}


def _seed(url: str, count: int) -> tuple[str, str]:
    db = open_database(url)
    db.migrate()
    with db.transaction() as session:
        account = accounts.create_account(session, name=f"bench-{count}").id
        key = keys.issue_api_key(session, account_id=account)
    with db.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO cards (id, account_id, type, content, is_favorited, created_at, updated_at) "
                "SELECT 'crd_b' || g, :a, 'text', 'card ' || g || ' about things', false, :t + g, :t + g "
                "FROM generate_series(1, :n) AS g"
            ),
            {"a": account, "t": now_ms() - count, "n": count},
        )
        for statement in SEED_TAGS.split(";"):
            if statement.strip():
                connection.execute(text(statement), {"a": account})
    with db.transaction() as session:
        counts.recount(session, account_id=account)  # the rows above went around the domain
    with db.engine.begin() as connection:
        connection.execute(text("ANALYZE"))
    db.dispose()
    return account, key


def _baseline(url: str, account: str, kind: str) -> float:
    engine = create_engine(url)
    with engine.begin() as connection:
        started = time.perf_counter()
        connection.execute(text(BASELINES[kind]), {"a": account, "now": now_ms()})
    elapsed = time.perf_counter() - started
    engine.dispose()
    return elapsed


class Reader(threading.Thread):
    """Lists, reads and edits (favorite on/off) cards of the account in a loop, recording
    latencies; every request must succeed."""

    def __init__(self, base: str, key: str) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"})
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        favorite = False
        while not self.stop.is_set():
            for method, path in (
                ("GET", "/v1/cards?limit=50"),
                ("GET", "/v1/cards/crd_b8"),
                ("PATCH", "/v1/cards/crd_b8/favorite"),
            ):
                favorite = not favorite
                body = {"isFavorited": favorite} if method == "PATCH" else None
                started = time.perf_counter()
                response = self.client.request(method, path, json=body)
                self.latencies.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text


def _p99(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98] * 1000 if len(latencies) > 2 else float("nan")


def _idle_p99(base: str, key: str, seconds: float) -> float:
    reader = Reader(base, key)
    reader.start()
    time.sleep(seconds)
    reader.stop.set()
    reader.join()
    return _p99(reader.latencies)


def _operation(base: str, key: str, kind: str) -> tuple[float, float, dict]:  # type: ignore[type-arg]
    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"})
    reader = Reader(base, key)
    reader.start()
    time.sleep(0.3)
    path, body = OPERATIONS[kind]
    started = time.perf_counter()
    response = client.post(path, json=body)
    assert response.status_code == 202, response.text
    operation = response.json()
    while operation["status"] == "running":
        time.sleep(0.01)
        operation = client.get(f"/v1/tags/operations/{operation['id']}").json()
    elapsed = time.perf_counter() - started
    reader.stop.set()
    reader.join()
    assert operation["status"] == "completed", operation
    return elapsed, _p99(reader.latencies), operation


def _wait_up(base: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("the API did not start")


def run(count: int, batch_size: int, workdir: str) -> None:
    engine = create_engine(POSTGRES, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("DROP DATABASE IF EXISTS cardvault_bench_tags WITH (FORCE)"))
        connection.execute(text("CREATE DATABASE cardvault_bench_tags"))
    engine.dispose()
    url = POSTGRES.rsplit("/", 1)[0] + "/cardvault_bench_tags"
    redis.Redis.from_url(REDIS).flushdb()
    account, key = _seed(url, count)
    env = {
        **os.environ,
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_REDIS_URL": REDIS,
        "CARDVAULT_DATA_DIR": workdir,
        "CARDVAULT_TAG_BATCH_SIZE": str(batch_size),
    }
    port = free_port()
    api = subprocess.Popen(
        [
            str(BIN / "uvicorn"),
            "--factory",
            "cardvault.handlers.http.app:app_from_env",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=ROOT,
    )
    worker = subprocess.Popen(
        [str(BIN / "cardvault"), "worker", "--processes", "1", "--threads", "1"],
        env=env,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(base + "/v1")
        _operation(base, key, "warm-up")  # the worker's first connection and query plans
        idle = _idle_p99(base, key, 4.0)
        for kind in ("rename", "merge", "delete"):
            baseline = _baseline(url, account, kind)
            elapsed, busy_p99, operation = _operation(base, key, kind)
            line = {
                "workload": f"tag_{kind}",
                "database": "postgresql",
                "cards": count,
                "metric": "seconds",
                "value": round(elapsed, 3),
                "baseline_value": round(baseline, 3),
                "ratio": round(elapsed / baseline, 2),
                "changed": operation["changed"],
                "read_p99_idle_ms": round(idle, 1),
                "read_p99_during_ms": round(busy_p99, 1),
                "read_p99_ratio": round(busy_p99 / idle, 2),
                "batch_size": batch_size,
            }
            print(json.dumps(line), flush=True)
    finally:
        api.terminate()
        os.killpg(worker.pid, signal.SIGTERM)
        api.wait()
        worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch-size", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        for count in args.cards:
            run(count, args.batch_size, workdir)


if __name__ == "__main__":
    main()
