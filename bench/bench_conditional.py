"""The cost of conditional requests (ETags) on GET one card and updateCard: requests per second
of the same workloads on two servers, in one run, in alternating rounds:

- ``before``: the code before conditional requests (the tree at ``--before``, a git revision,
  exported to a temporary directory and imported ahead of this checkout), on its own database;
- ``etags``: this checkout (every answer carries an ETag, its version column read and raised).

Workloads, each a round of ``--seconds`` per server: ``get`` (GET /v1/cards/{id}, no
conditional header), ``update`` (PATCH /v1/cards/{id} with new tags, no If-Match); and on the
``etags`` server alone, ``get-304`` (If-None-Match with the current ETag: 304, no body) and
``update-if-match`` (If-Match with the ETag the last answer gave). The ratio is ``before``'s
rps over this one's for the same workload in the same round (cost: above 1 is slower; the aim
is at most 1.05), the median of the rounds.

    .venv/bin/python -m bench.bench_conditional [--database postgresql|sqlite] [--seconds S]
        [--rounds R] [--before REV]

Each connection works on a card of its own (one account per connection). Each server is one
uvicorn process pinned to CPU 0 (when there are two); the load generator runs on CPU 1. Prints
`uptime` before and after, a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.load import LoadResult
from harness.servers import ROOT, free_port, fresh_database, start_uvicorn

CONNECTIONS = 8
_RAW = argparse.RawDescriptionHelpFormatter
_SEED = """
import json, sys
from cardvault.domain.auth import accounts, keys
from cardvault.domain.database import open_database
db = open_database(sys.argv[1]); db.migrate(); issued = []
with db.transaction() as session:
    for i in range(int(sys.argv[2])):
        account = accounts.create_account(session, name=f"bench-{i}")
        issued.append(keys.issue_api_key(session, account_id=account.id))
print(json.dumps(issued))
"""


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not on PATH")
    return found


def _before_tree(revision: str, workdir: Path) -> Path:
    """The code at ``revision`` as an importable ``cardvault`` (its src/ and openapi/)."""
    tree = workdir / "before"
    tree.mkdir()
    archive = subprocess.run(
        [_tool("git"), "archive", revision, "src", "openapi"], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run([_tool("tar"), "-x", "-C", str(tree)], input=archive.stdout, check=True)
    (tree / "src" / "openapi").symlink_to(tree / "openapi")
    (tree / "pkg").mkdir()
    (tree / "pkg" / "cardvault").symlink_to(tree / "src")
    return tree / "pkg"


def _seed(url: str, env: dict[str, str]) -> list[str]:
    seeded = subprocess.run(
        [sys.executable, "-c", _SEED, url, str(CONNECTIONS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    keys: list[str] = json.loads(seeded.stdout)
    return keys


def _cards(port: int, keys: list[str]) -> list[str]:
    """One card per account; its id."""
    made = []
    for key in keys:
        answer = httpx.post(
            f"http://127.0.0.1:{port}/v1/cards",
            json={"content": "a card to read and edit", "tags": ["bench"]},
            headers={"Authorization": f"Bearer {key}"},
        )
        answer.raise_for_status()
        made.append(answer.json()["card"]["id"])
    return made


async def _read(reader: asyncio.StreamReader) -> tuple[int, str]:
    """The status and ETag of one response (its body read and dropped)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status, length, etag = int(head.split(b" ", 2)[1]), 0, ""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"etag":
            etag = value.strip().decode()
    await reader.readexactly(length)
    return status, etag


Workload = Callable[[int, str, str, str, int], bytes]  # port, key, card, etag, n -> request


def _get(port: int, key: str, card: str, etag: str, n: int) -> bytes:
    extra = f"If-None-Match: {etag}\r\n" if etag else ""
    head = f"GET /v1/cards/{card} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
    return f"{head}{extra}\r\n".encode()


def _patch(port: int, key: str, card: str, etag: str, n: int) -> bytes:
    body = json.dumps({"tags": ["bench", f"t{n % 2}"]}).encode()
    extra = f"If-Match: {etag}\r\n" if etag else ""
    head = (
        f"PATCH /v1/cards/{card} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


WORKLOADS: dict[str, tuple[Workload, bool, int]] = {  # request, conditional, the status wanted
    "get": (_get, False, 200),
    "get-304": (_get, True, 304),
    "update": (_patch, False, 200),
    "update-if-match": (_patch, True, 200),
}


async def _load(port: int, keys: list[str], cards: list[str], workload: str, seconds: float) -> LoadResult:
    make, conditional, wanted = WORKLOADS[workload]
    latencies: list[float] = []
    counts = [0, 0]

    async def connection(key: str, card: str, until: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        etag, n = "", 0
        try:
            if conditional:  # the card's current ETag first
                writer.write(_get(port, key, card, "", 0))
                etag = (await _read(reader))[1]
            while time.perf_counter() < until:
                started = time.perf_counter()
                writer.write(make(port, key, card, etag if conditional else "", n))
                status, answered = await _read(reader)
                latencies.append(time.perf_counter() - started)
                counts[0 if status == wanted else 1] += 1
                etag, n = answered or etag, n + 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection(k, c, started + seconds) for k, c in zip(keys, cards, strict=True)))
    latencies.sort()
    return LoadResult(
        requests=counts[0],
        errors=counts[1],
        seconds=time.perf_counter() - started,
        p50_ms=statistics.median(latencies) * 1000,
        p99_ms=latencies[int(len(latencies) * 0.99)] * 1000,
    )


def _uptime() -> str:
    return subprocess.run([_tool("uptime")], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=_RAW)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per server and workload")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one round")
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    default = subprocess.run(
        [_tool("git"), "log", "--format=%H", "--diff-filter=A", "--", "src/domain/versions.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    parser.add_argument("--before", default=f"{default[-1]}^" if default else "HEAD", help="the code before")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    print("uptime before:", _uptime())

    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        before_path = _before_tree(args.before, workdir)
        base = {
            **os.environ,
            "CARDVAULT_VALIDATE_RESPONSES": "false",
            "CARDVAULT_FETCH_LINKS": "false",
            "CARDVAULT_AI": "false",
            "CARDVAULT_SPEECH": "false",
            "CARDVAULT_CAPTURE": "false",
        }
        servers: dict[str, dict[str, str]] = {}
        for name, path in (("before", str(before_path)), ("etags", "")):
            (workdir / f"data-{name}").mkdir()
            url = fresh_database(args.database, workdir / f"data-{name}", name=f"conditional_{name}")
            env = {**base, "CARDVAULT_DATABASE_URL": url, "CARDVAULT_DATA_DIR": str(workdir / f"data-{name}")}
            env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(ROOT)) if p)
            servers[name] = env
        keys = {name: _seed(env["CARDVAULT_DATABASE_URL"], env) for name, env in servers.items()}
        ports = {name: free_port() for name in servers}
        target = ["--factory", "cardvault.handlers.http.app:app_from_env"]
        processes = [start_uvicorn(target, env, ports[name]) for name, env in servers.items()]
        try:
            cards = {name: _cards(ports[name], keys[name]) for name in servers}
            runs = [("before", "get"), ("etags", "get"), ("etags", "get-304")]
            runs += [("before", "update"), ("etags", "update"), ("etags", "update-if-match")]
            totals: dict[tuple[str, str], list[LoadResult]] = {run: [] for run in runs}
            for name, workload in runs:  # warm up
                asyncio.run(_load(ports[name], keys[name], cards[name], workload, 1.0))
            for round_ in range(args.rounds):
                for name, workload in runs if round_ % 2 == 0 else runs[::-1]:
                    result = asyncio.run(_load(ports[name], keys[name], cards[name], workload, args.seconds))
                    totals[(name, workload)].append(result)
        finally:
            for process in processes:
                process.terminate()
                process.wait()

    print("uptime after: ", _uptime())
    print(
        f"\nGET /v1/cards/{{id}} and PATCH /v1/cards/{{id}}, {args.database}, {args.rounds} alternating"
        f" rounds of {args.seconds:.0f} s, {CONNECTIONS} connections; before = {args.before}"
    )
    print("cost ratio: before's rps over this one's in the same round (median, min-max of the rounds)")
    print(f"{'server':<8}{'workload':<18}{'rps':>8}{'cost ratio':>12}{'rounds':>14}{'p50/p99 ms':>16}")
    for (name, workload), parts in totals.items():
        assert all(p.errors == 0 for p in parts), (name, workload, parts)
        baseline = totals[("before", "get" if workload.startswith("get") else "update")]
        ratios = sorted(b.rps / r.rps for b, r in zip(baseline, parts, strict=True))
        rps = sum(p.requests for p in parts) / sum(p.seconds for p in parts)
        p50, p99 = statistics.median(p.p50_ms for p in parts), statistics.median(p.p99_ms for p in parts)
        print(
            f"{name:<8}{workload:<18}{rps:>8.0f}{statistics.median(ratios):>12.3f}"
            f"{ratios[0]:>8.2f}-{ratios[-1]:<5.2f}{p50:>9.1f}/{p99:<6.1f}"
        )
        line = {
            "workload": workload,
            "server": name,
            "database": args.database,
            "metric": "rps",
            "value": round(rps, 1),
            "cost_ratio": round(statistics.median(ratios), 3),
            "p99_ms": round(p99, 2),
        }
        print(json.dumps(line))


if __name__ == "__main__":
    main()
