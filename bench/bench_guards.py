"""The cost of the rate limiter and the Idempotency-Key check on POST /v1/cards: requests per
second of the same create on three servers of the same code and database, in one run, in
alternating rounds:

- ``bare``: the `cards` rate limit turned off, no Idempotency-Key sent (the baseline);
- ``limited``: the rate limit counted in Redis (moving window, the default 600 a minute);
- ``limited+key``: the same, each request with a fresh Idempotency-Key (checked, held, recorded).

Two ratios: requests per second (bare over this one; the database and the load generator share
the second CPU, so it moves with them) and the API process's own CPU time per request (this
one over bare), each the median of the rounds' ratios.

    .venv/bin/python -m bench.bench_guards [--database postgresql|sqlite] [--seconds S] [--rounds R]

Requests rotate over 64 accounts, so none reaches its limit (every request does the work). Each
server is one uvicorn process pinned to CPU 0 (when there are two); the load generator runs on
CPU 1 with 16 keep-alive connections. Prints a table and one JSON line per server.
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
from pathlib import Path

from bench.load import LoadResult, read_response
from cardvault.domain.auth import accounts, keys
from cardvault.domain.database import open_database
from harness.servers import free_port, fresh_database, start_uvicorn

TICK = os.sysconf("SC_CLK_TCK")
REDIS = os.environ.get("CARDVAULT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
ACCOUNTS = 64
CONNECTIONS = 16


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _keys(url: str) -> list[str]:
    db = open_database(url)
    db.migrate()
    issued = []
    with db.transaction() as session:
        for i in range(ACCOUNTS):
            account = accounts.create_account(session, name=f"bench-{i}")
            issued.append(keys.issue_api_key(session, account_id=account.id))
    db.dispose()
    return issued


async def _load(port: int, keys: list[str], with_key: bool, seconds: float, run: str) -> LoadResult:
    counter = itertools.count()
    latencies: list[float] = []
    counts = [0, 0]

    def request() -> bytes:
        n = next(counter)
        body = json.dumps({"content": f"bench card {n}", "tags": ["bench"]}).encode()
        lines = [
            "POST /v1/cards HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            f"Authorization: Bearer {keys[n % len(keys)]}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            *([f"Idempotency-Key: {run}-{n}"] if with_key else []),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    async def connection(until: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < until:
                started = time.perf_counter()
                writer.write(request())
                status = await read_response(reader)
                latencies.append(time.perf_counter() - started)
                counts[0 if status == 200 else 1] += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection(started + seconds) for _ in range(CONNECTIONS)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return LoadResult(
        requests=counts[0],
        errors=counts[1],
        seconds=elapsed,
        p50_ms=statistics.median(latencies) * 1000,
        p99_ms=latencies[int(len(latencies) * 0.99)] * 1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per server")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})

    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir))
        keys = _keys(url)
        env = {
            **os.environ,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_DATA_DIR": workdir,
            "CARDVAULT_VALIDATE_RESPONSES": "false",
            "CARDVAULT_REDIS_URL": REDIS,
        }
        target = ["--factory", "cardvault.handlers.http.app:app_from_env"]
        servers = {
            "bare": ({**env, "CARDVAULT_RATE_LIMIT_CARDS": "off"}, False),
            "limited": (env, False),
            "limited+key": (env, True),
        }
        ports = {name: free_port() for name in servers}
        processes = [
            start_uvicorn(target, server_env, ports[name]) for name, (server_env, _) in servers.items()
        ]
        totals: dict[str, list[LoadResult]] = {name: [] for name in servers}
        cpu: dict[str, list[float]] = {name: [] for name in servers}  # API CPU ms per request
        try:
            for name, (_, with_key) in servers.items():
                asyncio.run(_load(ports[name], keys, with_key, 1.5, f"warm-{name}"))
            for round_ in range(args.rounds):
                order = list(servers) if round_ % 2 == 0 else list(servers)[::-1]
                for name in order:
                    with_key = servers[name][1]
                    pid = processes[list(servers).index(name)].pid
                    before = _cpu_seconds(pid)
                    result = asyncio.run(_load(ports[name], keys, with_key, args.seconds, f"{round_}-{name}"))
                    cpu[name].append((_cpu_seconds(pid) - before) * 1000 / max(result.requests, 1))
                    totals[name].append(result)
        finally:
            for process in processes:
                process.terminate()
                process.wait()

    results = {
        name: LoadResult(
            requests=sum(p.requests for p in parts),
            errors=sum(p.errors for p in parts),
            seconds=sum(p.seconds for p in parts),
            p50_ms=statistics.median(p.p50_ms for p in parts),
            p99_ms=statistics.median(p.p99_ms for p in parts),
        )
        for name, parts in totals.items()
    }
    bare = results["bare"]
    print(
        f"\nPOST /v1/cards, {args.database} + Redis, {args.rounds} alternating rounds of "
        f"{args.seconds:.0f} s per server, {CONNECTIONS} connections, {ACCOUNTS} accounts"
    )
    print("cost ratio: the bare server's rps over this one's, per round (median, min-max of rounds);")
    print("cpu ratio: this server's API-process CPU per request over the bare one's, per round (median)")
    header = f"{'server':<14}{'rps':>8}{'cost ratio':>12}{'rounds':>14}{'cpu ms/req':>12}{'cpu ratio':>11}"
    print(header + f"{'p50/p99 ms':>16}")
    for name, result in results.items():
        assert result.errors == 0, (name, result)
        # Each round measured all three servers back to back: its ratio is free of slower drift.
        ratios = sorted(b.rps / r.rps for b, r in zip(totals["bare"], totals[name], strict=True))
        ratio = statistics.median(ratios)
        cpu_ratio = statistics.median(c / b for b, c in zip(cpu["bare"], cpu[name], strict=True))
        print(
            f"{name:<14}{result.rps:>8.0f}{ratio:>12.3f}{ratios[0]:>8.2f}-{ratios[-1]:<5.2f}"
            f"{statistics.median(cpu[name]):>12.2f}{cpu_ratio:>11.3f}"
            f"{result.p50_ms:>9.1f}/{result.p99_ms:<6.1f}"
        )
        line = {
            "workload": "create_card",
            "server": name,
            "database": args.database,
            "metric": "rps",
            "value": round(result.rps, 1),
            "baseline_value": round(bare.rps, 1),
            "cost_ratio": round(ratio, 3),
            "cpu_ms_per_request": round(statistics.median(cpu[name]), 3),
            "cpu_ratio": round(cpu_ratio, 3),
            "p99_ms": round(result.p99_ms, 2),
        }
        print(json.dumps(line))


if __name__ == "__main__":
    main()
