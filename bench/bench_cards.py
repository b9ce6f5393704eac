"""Requests per second of GET /v1/cards/{id} and GET /v1/cards (a page of 50 out of 10,000
cards), against a bare Starlette endpoint running the same SQL with the driver directly, in
the same run, on the same database, in alternating rounds.

With ``--observability`` the API runs three ways instead, against itself: metrics and tracing
off (``api``), metrics on (``metrics``), and metrics on with traces sampled at 10% and sent to
a local OTLP sink (``both``); the ratios are each to ``api`` (aims: metrics at most 1.05x the
time, both at most 1.15x: throughput ratios of at least 0.952 and 0.870).

    .venv/bin/python -m bench.bench_cards [--database postgresql|sqlite] [--cards N]
        [--seconds S] [--rounds R] [--observability]

Each server is one uvicorn process pinned to CPU 0 (when there are two); the load generator
runs on CPU 1 with 16 keep-alive connections. Prints a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
from pathlib import Path

from bench.load import LoadResult, run_load
from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from harness.servers import free_port, fresh_database, page_server, start_uvicorn


def _seed(url: str, count: int) -> tuple[str, str]:
    """Create an account with `count` cards (tagged, varied) and return its key and a card id."""
    db = open_database(url)
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
                ).card
                card_id = card.id
    if url.startswith("postgresql"):
        # Statistics, as autovacuum gathers them on a live database: without them the planner
        # reads and sorts every card of the account for a page (84 ms instead of 0.7 ms at
        # 10,000 cards), and the benchmark measures a plan no running service has.
        with db.engine.connect() as connection:
            connection.exec_driver_sql("ANALYZE")
            connection.commit()
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
    parser.add_argument(
        "--observability", action="store_true", help="the API with metrics and traces off and on"
    )
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})

    with tempfile.TemporaryDirectory() as workdir, contextlib.ExitStack() as stack:
        url = fresh_database(args.database, Path(workdir))
        key, card_id = _seed(url, args.cards)
        env = {
            **os.environ,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_DATA_DIR": workdir,
            "CARDVAULT_VALIDATE_RESPONSES": "false",
        }
        api = ["--factory", "cardvault.handlers.http.app:app_from_env"]
        sink = stack.enter_context(page_server())
        sink.routes["/v1/traces"] = (200, {"Content-Type": "application/x-protobuf"}, b"")
        traced = {"CARDVAULT_OTLP_ENDPOINT": sink.url(""), "CARDVAULT_TRACE_SAMPLE": "0.1"}
        servers, envs = (
            (
                {"api": api, "metrics": api, "both": api},
                {"api": {"CARDVAULT_METRICS": "false"}, "both": traced},
            )
            if args.observability
            else ({"api": api, "baseline": ["--factory", "harness.baseline:app_from_env"]}, {})
        )
        workloads = {"get_card": f"/v1/cards/{card_id}", "list_cards_50": "/v1/cards?limit=50"}
        ports = {name: free_port() for name in servers}
        processes = [
            start_uvicorn(target, {**env, **envs.get(name, {})}, ports[name])
            for name, target in servers.items()
        ]
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

    if args.observability:
        _report_observability(args, workloads, results)
        return
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


AIMS = {"metrics": 1.05, "both": 1.15}  # at most this many times the time of a request with neither


def _report_observability(
    args: argparse.Namespace, workloads: dict[str, str], results: dict[tuple[str, str], LoadResult]
) -> None:
    print(
        f"\n{args.database}, {args.cards} cards, {args.rounds} alternating rounds of "
        f"{args.seconds:.0f} s per server, 16 connections; time ratios to the API with neither"
    )
    print(f"{'workload':<16}{'off rps':>10}{'metrics':>10}{'x':>7}{'both':>10}{'x':>7}")
    for workload in workloads:
        off = results[("api", workload)]
        row = f"{workload:<16}{off.rps:>10.0f}"
        for name in AIMS:
            on = results[(name, workload)]
            assert on.errors == 0 and off.errors == 0, (on, off)
            ratio = off.rps / on.rps  # time per request, on over off
            row += f"{on.rps:>10.0f}{ratio:>7.3f}"
            line = {
                "workload": f"{workload}_{name}",
                "database": args.database,
                "metric": "time ratio to neither",
                "value": round(on.rps, 1),
                "baseline_value": round(off.rps, 1),
                "time_ratio": round(ratio, 3),
                "aim_ratio": AIMS[name],
                "meets": ratio <= AIMS[name],
            }
            print(json.dumps(line))
        print(row)


if __name__ == "__main__":
    main()
