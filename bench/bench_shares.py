"""A share of a 10,000-card folder on PostgreSQL (issue 47): the latency of its page's first
page, of its Atom feed, and of the feed's 304 answer to If-None-Match, sequential requests
from one keep-alive connection to one uvicorn process (pinned to CPU 0 when there are two).

Aims: the first page's p99 at most 20 ms; the 304's median at most 0.3 of the full feed's.

    .venv/bin/python -m bench.bench_shares [--database postgresql|sqlite] [--cards N] [--requests R]

Prints a table and one JSON line per workload. (Not measured here yet: a smart folder over 1M
cards, which bench_scale's q budget covers once it lists smart folders. Polling 1,000
unchanged subscriptions against bare httpx conditional GETs: bench/bench_subscriptions.py.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from cardvault.domain import folders, shares
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from harness.servers import free_port, fresh_database, start_uvicorn


def _seed(url: str, count: int) -> str:
    """An account with a folder of ``count`` cards, shared; the share's page path."""
    db = open_database(url)
    db.migrate()
    with db.transaction() as session:
        account = accounts.create_account(session, name="bench-shares")
        folder_id = folders.create_folder(session, account_id=account.id, name="Shared").id
    for start in range(0, count, 1000):
        with db.transaction() as session:
            ids = [
                editing.add_card(
                    session,
                    account_id=account.id,
                    content=f"Card {i}: notes about topic {i % 97}",
                    tags=[f"topic-{i % 20}"],
                    url=f"https://example.com/{i}" if i % 3 == 0 else None,
                ).card.id
                for i in range(start, min(start + 1000, count))
            ]
            for chunk in range(0, len(ids), 100):
                folders.add_cards(
                    session, account_id=account.id, folder_id=folder_id, card_ids=ids[chunk : chunk + 100]
                )
    with db.transaction() as session:
        _, token = shares.create_share(session, account_id=account.id, folder_id=folder_id)
    if url.startswith("postgresql"):
        with db.engine.connect() as connection:  # statistics, as autovacuum gathers them
            connection.exec_driver_sql("ANALYZE")
            connection.commit()
    db.dispose()
    return f"/s/{token}"


def _times(
    client: httpx.Client, path: str, requests: int, headers: dict[str, str], status: int
) -> list[float]:
    for _ in range(20):  # warm up
        client.get(path, headers=headers)
    took = []
    for _ in range(requests):
        started = time.perf_counter()
        answer = client.get(path, headers=headers)
        took.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == status, answer.status_code
    return took


def _p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir), name="bench_shares")
        page = _seed(url, args.cards)
        env = {
            **os.environ,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_DATA_DIR": workdir,
            "CARDVAULT_VALIDATE_RESPONSES": "false",
            "CARDVAULT_RATE_LIMIT_SHARE": "off",
            "CARDVAULT_RATE_LIMIT_SHARE_ADDRESS": "off",
        }
        port = free_port()
        process = start_uvicorn(["--factory", "cardvault.handlers.http.app:app_from_env"], env, port)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                feed = urlsplit(page + "/feed.atom").path
                etag = client.get(feed).headers["etag"]
                results = {
                    "page_first": _times(client, page, args.requests, {}, 200),
                    "feed_full": _times(client, feed, args.requests, {}, 200),
                    "feed_304": _times(client, feed, args.requests, {"If-None-Match": etag}, 304),
                }
        finally:
            process.terminate()
            process.wait(timeout=10)
    print(f"{'workload':<12} {'p50 ms':>8} {'p99 ms':>8}")
    for name, took in results.items():
        print(f"{name:<12} {statistics.median(took):>8.2f} {_p(took, 0.99):>8.2f}")
    ratio = statistics.median(results["feed_304"]) / statistics.median(results["feed_full"])
    for name, took in results.items():
        line = {
            "workload": name,
            "cards": args.cards,
            "p50_ms": statistics.median(took),
            "p99_ms": _p(took, 0.99),
        }
        print(json.dumps(line))
    print(json.dumps({"workload": "feed_304_ratio", "ratio": round(ratio, 3), "aim": 0.3}))


if __name__ == "__main__":
    main()
