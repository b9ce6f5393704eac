"""The cost of a tool call at /mcp against the same HTTP operation: getCard and listCards (a page
of 50), each at the current protocol revision (2026-07-28: one self-contained POST) and the one
before it (2025-11-25, stateless), on one served process over PostgreSQL, sent one after
another by one client, in alternating rounds (HTTP first in even rounds, MCP first in odd
ones). A tool call is one JSON-RPC ``tools/call`` POST (stateless, JSON answer), which the
server serves by sending the operation's request through its own app. The ratio is the median
MCP latency over the median HTTP latency of the same workload in the same round, the median of
the rounds; the aim is at most 1.3. Beside each latency, the server's CPU time per call (its
processes' user and system time over the calls), which a loaded machine disturbs less than the
wall clock.

    .venv/bin/python -m bench.bench_mcp [--database postgresql|sqlite] [--rounds R] [--calls N]

The server is pinned to CPU 0 (when there are two). Prints `uptime` before and after, a table
and one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from harness.servers import fresh_database, prepared, server_env, serving

AIM = 1.3
CARDS = 60


def _uptime() -> str:
    found = shutil.which("uptime")
    if found is None:
        return "uptime: not on PATH"
    return subprocess.run([found], capture_output=True, text=True, check=False).stdout.strip()


MODERN = "2026-07-28"  # the current revision: one self-contained POST, no handshake
LEGACY = "2025-11-25"  # the revision before it: the initialize handshake's transport


def _tool_call(
    client: httpx.Client, name: str, arguments: dict[str, object], version: str
) -> Callable[[], None]:
    params: dict[str, object] = {"name": name, "arguments": arguments}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
    if version == MODERN:  # the envelope each request carries, and its routing headers
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        }
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    def call() -> None:
        answer = client.post("/mcp", json=body, headers=headers)
        assert answer.status_code == 200 and not answer.json()["result"]["isError"], answer.text

    return call


def _http(client: httpx.Client, path: str) -> Callable[[], None]:
    def call() -> None:
        answer = client.get(path)
        assert answer.status_code == 200, answer.text

    return call


def _server_cpu() -> float:
    """CPU seconds the server processes (this process's children) have used so far."""
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            total += times.user + times.system
    return total


def _measure(work: Callable[[], None], calls: int) -> tuple[float, float]:
    """The median latency (ms) of ``calls`` calls, and the server's CPU ms per call."""
    timings = []
    cpu = _server_cpu()
    for _ in range(calls):
        started = time.perf_counter()
        work()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings), (_server_cpu() - cpu) * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    print("before:", _uptime())
    with tempfile.TemporaryDirectory() as workdir:
        env = {
            **server_env(Path(workdir), fresh_database(args.database, Path(workdir), name="mcp")),
            "CARDVAULT_VALIDATE_RESPONSES": "false",  # as served in production
        }
        key = prepared(env, account="bench-mcp")
        with serving(env, Path(workdir) / "server.log", pin=True) as base:
            origin = base.removesuffix("/v1")
            with httpx.Client(
                base_url=origin, headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as client:
                ids = [
                    client.post("/v1/cards", json={"content": f"card {n} of the bench"}).json()["card"]["id"]
                    for n in range(CARDS)
                ]
                get, page = {"cardId": ids[0]}, {"limit": 50}
                workloads = {
                    f"{name}@{version}": (_http(client, path), _tool_call(client, tool, arguments, version))
                    for name, path, tool, arguments in (
                        ("get", f"/v1/cards/{ids[0]}", "getCard", get),
                        ("list-50", "/v1/cards?limit=50", "listCards", page),
                    )
                    for version in (MODERN, LEGACY)
                }
                for http, mcp in workloads.values():  # warm both paths, uncounted
                    _measure(http, 20)
                    _measure(mcp, 20)
                ratios: dict[str, list[float]] = {name: [] for name in workloads}
                cpu_ratios: dict[str, list[float]] = {name: [] for name in workloads}
                medians: dict[str, dict[str, list[float]]] = {
                    n: {"http": [], "mcp": [], "http_cpu": [], "mcp_cpu": []} for n in workloads
                }
                for round_ in range(args.rounds):
                    for name, (http, mcp) in workloads.items():
                        order = [("http", http), ("mcp", mcp)]
                        sides = order if round_ % 2 == 0 else order[::-1]
                        measured = {side: _measure(work, args.calls) for side, work in sides}
                        for side in ("http", "mcp"):
                            medians[name][side].append(measured[side][0])
                            medians[name][f"{side}_cpu"].append(measured[side][1])
                        ratios[name].append(measured["mcp"][0] / measured["http"][0])
                        cpu_ratios[name].append(measured["mcp"][1] / measured["http"][1])
    print("after:", _uptime())
    print(
        f"{'workload':<22}{'http ms':>9}{'mcp ms':>9}{'ratio':>7}{'http cpu':>10}{'mcp cpu':>9}{'ratio':>7}"
    )
    summary = {}
    for name in workloads:
        got = {key: statistics.median(values) for key, values in medians[name].items()}
        ratio, cpu_ratio = statistics.median(ratios[name]), statistics.median(cpu_ratios[name])
        print(
            f"{name:<22}{got['http']:>9.2f}{got['mcp']:>9.2f}{ratio:>7.2f}"
            f"{got['http_cpu']:>10.2f}{got['mcp_cpu']:>9.2f}{cpu_ratio:>7.2f}"
        )
        summary[name] = {
            **{key: round(value, 2) for key, value in got.items()},
            "ratio": round(ratio, 3),
            "cpu_ratio": round(cpu_ratio, 3),
        }
    print(f"(ms: median latency; cpu: the server's CPU ms per call; aim: ratio <= {AIM})")
    print(
        json.dumps({"bench": "mcp", "database": args.database, "aim": AIM, "rounds": args.rounds, **summary})
    )


if __name__ == "__main__":
    main()
