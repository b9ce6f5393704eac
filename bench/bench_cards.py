"""Requests per second of GET /v1/cards/{id} and GET /v1/cards (a page of 50 out of 10,000
cards), against a bare Starlette endpoint running the same SQL with the driver directly, in
the same run, on the same database, in alternating rounds.

    .venv/bin/python -m bench.bench_cards [--database postgresql|sqlite] [--cards N]
        [--seconds S] [--rounds R]

Each server is one uvicorn process pinned to CPU 0 (when there are two); the load generator
runs on CPU 1 with 16 keep-alive connections. Prints a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from bench.load import LoadResult, run_load
from bench.servers import free_port, fresh_database, start_uvicorn
from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing
from cardvault.domain.db import Database


def _seed(url: str, count: int) -> tuple[str, str]:
    """Create an account with `count` cards (tagged, varied) and return its key and a card id."""
    db = Database.from_url(url)
    db.migrate()
    with db.transaction() as session:
        account = accounts.create_account(session, name="bench")
        key = keys.issue_api_key(session, account_id=account.id)
    card_id = ""
    for start in range(0, count, 1000):
        with db.transaction() as session:
            for i in range(start, min(start + 1000, count)):
                card = editing.add_card(
                    session,
                    account_id=account.id,
                    content=f"Card {i}: notes about topic {i % 97} and idea {i % 13}",
                    tags=[f"topic-{i % 20}", f"group-{i % 7}"],
                    url=f"https://example.com/{i}" if i % 3 == 0 else None,
                )
                card_id = card.id
    db.dispose()
    return key, card_id


def _measure(port: int, path: str, key: str, seconds: float) -> LoadResult:
    return run_load("127.0.0.1", port, path, {"Authorization": f"Bearer {key}"}, seconds=seconds)


def _combined(parts: list[LoadResult]) -> LoadResult:
    """The rounds of one server and workload as one run: requests over time; the median of the
    rounds' latency percentiles."""
    return LoadResult(
        requests=sum(p.requests for p in parts),
        errors=sum(p.errors for p in parts),
        seconds=sum(p.seconds for p in parts),
        p50_ms=statistics.median(p.p50_ms for p in parts),
        p99_ms=statistics.median(p.p99_ms for p in parts),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per server and workload")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})

    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir))
        key, card_id = _seed(url, args.cards)
        env = {
            **os.environ,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_DATA_DIR": workdir,
            "CARDVAULT_VALIDATE_RESPONSES": "false",
        }
        servers = {
            "api": ["--factory", "cardvault.handlers.http.app:app_from_env"],
            "baseline": ["bench.baseline:app"],
        }
        workloads = {"get_card": f"/v1/cards/{card_id}", "list_cards_50": "/v1/cards?limit=50"}
        ports = {name: free_port() for name in servers}
        processes = [start_uvicorn(target, env, ports[name]) for name, target in servers.items()]
        # Rounds alternate the two servers (and swap which goes first), so a drift of the
        # machine during the run lands on both sides of the ratio alike.
        totals: dict[tuple[str, str], list[LoadResult]] = {}
        try:
            for workload, path in workloads.items():
                for name in servers:
                    _measure(ports[name], path, key, 1.5)  # warm-up
                for round_ in range(args.rounds):
                    order = list(servers) if round_ % 2 == 0 else list(servers)[::-1]
                    for name in order:
                        result = _measure(ports[name], path, key, args.seconds)
                        totals.setdefault((name, workload), []).append(result)
        finally:
            for process in processes:
                process.terminate()
                process.wait()
        results = {run: _combined(parts) for run, parts in totals.items()}

    print(
        f"\n{args.database}, {args.cards} cards, {args.rounds} alternating rounds of "
        f"{args.seconds:.0f} s per server, 16 connections"
    )
    header = ("workload", "api rps", "base rps", "ratio", "api p50/p99 ms", "base p50/p99 ms")
    print(f"{header[0]:<16}{header[1]:>10}{header[2]:>10}{header[3]:>8}{header[4]:>18}{header[5]:>19}")
    for workload in workloads:
        api, base = results[("api", workload)], results[("baseline", workload)]
        assert api.errors == 0 and base.errors == 0, (api, base)
        ratio = api.rps / base.rps
        print(
            f"{workload:<16}{api.rps:>10.0f}{base.rps:>10.0f}{ratio:>8.2f}"
            f"{api.p50_ms:>9.1f}/{api.p99_ms:<8.1f}{base.p50_ms:>10.1f}/{base.p99_ms:<8.1f}"
        )
        line = {
            "workload": workload,
            "database": args.database,
            "cards": args.cards,
            "metric": "rps",
            "value": round(api.rps, 1),
            "baseline_value": round(base.rps, 1),
            "ratio": round(ratio, 3),
            "p99_ms": round(api.p99_ms, 2),
            "baseline_p99_ms": round(base.p99_ms, 2),
        }
        print(json.dumps(line))


if __name__ == "__main__":
    main()
