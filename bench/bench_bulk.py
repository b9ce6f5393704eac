"""Bulk card operations against the single ones: cards per second of

- ``create``: one ``bulkCards`` create of 100 cards against 100 ``createCard`` requests;
- ``tag``: one ``bulkCards`` tag (then untag) of 100 cards against 100 ``updateCard`` requests
  setting the same tags (every request changes each card: the tag goes on, then off again),

on one server and database, in alternating rounds (single, bulk, then bulk, single, ...), each
round a fixed time with CONNECTIONS keep-alive connections, one account each (its own 100
cards for ``tag``). The ratio is bulk over single cards per second, per round (median, and the
rounds' range).

    .venv/bin/python -m bench.bench_bulk [--database postgresql|sqlite] [--seconds S] [--rounds R]

The server is one uvicorn process pinned to CPU 0 (when there are two), the load generator on
CPU 1; rate limits are off (a bulk create of 100 spends 100 of ``cards``); the broker is on
Redis (``CARDVAULT_BENCH_REDIS_URL``, database 15 by default: give it a database of your own)
with no worker, so the stages the created cards queue wait there (and are left there: delete
the ``dramatiq:files`` keys after) and cost the server nothing but their sending. Prints a
table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.load import read_response
from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from harness.servers import free_port, fresh_database, start_uvicorn

CONNECTIONS = 4
ITEMS = 100
# A broker on Redis (no worker reads it), so the created cards' stages are queued, as in
# production, and not run by an embedded worker in the server measured.
REDIS = os.environ.get("CARDVAULT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")

Request = tuple[str, str, dict[str, object]]  # method, path, body


def _accounts(url: str) -> list[tuple[str, list[str]]]:
    """One account per connection, with its key and ITEMS cards to tag."""
    db = open_database(url)
    db.migrate()
    made = []
    with db.transaction() as session:
        for i in range(CONNECTIONS):
            account = accounts.create_account(session, name=f"bulk-bench-{i}")
            key = keys.issue_api_key(session, account_id=account.id)
            cards = [
                editing.add_card(session, account_id=account.id, content=f"to tag {n}").card.id
                for n in range(ITEMS)
            ]
            made.append((key, cards))
    db.dispose()
    return made


def _requests(workload: str, bulk: bool, cards: list[str]) -> Callable[[int], list[Request]]:
    """The requests of the n-th batch of ITEMS cards (one bulk request, or ITEMS single ones)."""

    def batch(n: int) -> list[Request]:
        on = n % 2 == 0  # tag goes on, then off again
        if workload == "create":
            items = [{"content": f"bench card {n}-{i}", "tags": ["bench"]} for i in range(ITEMS)]
            if bulk:
                return [("POST", "/v1/cards/bulk", {"operation": "create", "items": items})]
            return [("POST", "/v1/cards", item) for item in items]
        if bulk:
            items = [{"cardId": card, "tags": ["bench"]} for card in cards]
            return [("POST", "/v1/cards/bulk", {"operation": "tag" if on else "untag", "items": items})]
        return [("PATCH", f"/v1/cards/{card}", {"tags": ["bench"] if on else []}) for card in cards]

    return batch


async def _load(
    port: int, people: list[tuple[str, list[str]]], workload: str, bulk: bool, seconds: float
) -> float:
    """Cards per second over ``seconds``: each connection sends whole batches of ITEMS cards."""
    done = [0]

    async def connection(key: str, cards: list[str], until: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        batches = _requests(workload, bulk, cards)
        try:
            for n in itertools.count():
                if time.perf_counter() >= until:
                    break
                for method, path, body in batches(n):
                    raw = json.dumps(body).encode()
                    head = (
                        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(raw)}\r\n\r\n"
                    )
                    writer.write(head.encode() + raw)
                    status = await read_response(reader)
                    assert status == 200, (workload, bulk, status)
                done[0] += ITEMS
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection(key, cards, started + seconds) for key, cards in people))
    return done[0] / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per workload and kind")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir), name="bench_bulk")
        people = _accounts(url)
        env = {
            **os.environ,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_DATA_DIR": workdir,
            "CARDVAULT_VALIDATE_RESPONSES": "false",
            "CARDVAULT_RATE_LIMIT_CARDS": "off",
            "CARDVAULT_REDIS_URL": REDIS,
        }
        port = free_port()
        server = start_uvicorn(["--factory", "cardvault.handlers.http.app:app_from_env"], env, port)
        rates: dict[tuple[str, bool], list[float]] = {}
        try:
            for workload in ("create", "tag"):
                for bulk in (False, True):  # warm
                    asyncio.run(_load(port, people, workload, bulk, 1.0))
                for round_ in range(args.rounds):
                    for bulk in (False, True) if round_ % 2 == 0 else (True, False):
                        rate = asyncio.run(_load(port, people, workload, bulk, args.seconds))
                        rates.setdefault((workload, bulk), []).append(rate)
        finally:
            server.terminate()
            server.wait()
    print(
        f"\nbulkCards against single requests, {args.database}, {args.rounds} alternating rounds of "
        f"{args.seconds:.0f} s, {CONNECTIONS} connections, batches of {ITEMS} cards; "
        f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"{'workload':<10}{'single cards/s':>16}{'bulk cards/s':>14}{'ratio':>8}{'rounds':>14}")
    for workload in ("create", "tag"):
        single, bulk = rates[(workload, False)], rates[(workload, True)]
        ratios = sorted(b / s for s, b in zip(single, bulk, strict=True))
        ratio = statistics.median(ratios)
        print(
            f"{workload:<10}{statistics.median(single):>16.0f}{statistics.median(bulk):>14.0f}"
            f"{ratio:>8.2f}{ratios[0]:>8.2f}-{ratios[-1]:<5.2f}"
        )
        line = {
            "workload": f"bulk_{workload}",
            "database": args.database,
            "metric": "cards_per_second",
            "value": round(statistics.median(bulk), 1),
            "baseline_value": round(statistics.median(single), 1),
            "ratio": round(ratio, 2),
            "load_average": [round(x, 2) for x in load],
        }
        print(json.dumps(line))


if __name__ == "__main__":
    main()
