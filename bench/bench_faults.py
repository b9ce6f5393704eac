"""Faults: what the service does while a component it needs fails and after it comes back, for
every scenario in bench/faults (the fault tests run the same scenarios, smaller):

- requests sent, and the answers by status (and error code; `dropped`: a connection lost with
  the process killed under it);
- bad answers: a 500, an error body other than a passing fault's 503 with `retryAt`, a request
  unanswered for 30 s (must be 0);
- acknowledged writes, and those lost (not stored exactly once afterwards; must be 0);
- unsettled jobs: cards still processing or failed, operations or exports not ended, 60 s after
  the fault (must be 0);
- recover_s: from the fault's end to the first write acknowledged again; settle_s: from then to
  every job started having ended.

Each scenario runs real `cardvault serve` (two API processes) and `cardvault worker` processes,
a Redis of its own and a fresh PostgreSQL database (the shared server is never stopped; the
restart scenario runs a cluster of its own).

    .venv/bin/python -m bench.bench_faults [--only NAME ...] [--kills N]

Prints a table, then one JSON line per scenario.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.faults import Outcome
from harness.faults.disk import disk_full
from harness.faults.kills import processes_killed
from harness.faults.postgres import connections_killed, server_restarted
from harness.faults.redis import redis_restarted
from harness.faults.storage import s3_stopped
from harness.servers import fresh_database

# name -> the scenario, run with a fresh working directory and PostgreSQL database URL.
Scenario = Callable[[Path, str, argparse.Namespace], Outcome]
SCENARIOS: dict[str, Scenario] = {
    "pg-kills": lambda work, url, _args: connections_killed(work, url, kills=8, clients=4, pace=0.02),
    "pg-restart": lambda work, _url, _args: server_restarted(work, mode="fast", down_seconds=5.0, clients=4),
    "pg-crash": lambda work, _url, _args: server_restarted(
        work, mode="immediate", down_seconds=5.0, clients=4
    ),
    "redis": lambda work, url, _args: redis_restarted(work, url, down_seconds=5.0, clients=4, pace=0.02),
    "s3": lambda work, url, _args: s3_stopped(work, url, down_seconds=5.0, clients=4, pace=0.02),
    "disk": lambda work, url, _args: disk_full(work, url, clients=4, pace=0.02, fault_seconds=5.0),
    "disk-embedded": lambda work, _url, _args: disk_full(work, None, clients=4, pace=0.02, fault_seconds=5.0),
    "kills": lambda work, url, args: processes_killed(
        work, url, kills=args.kills, clients=4, apart=(0.2, 1.0), settle_timeout=300
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="+", choices=sorted(SCENARIOS), help="run only these scenarios")
    parser.add_argument("--kills", type=int, default=50, help="SIGKILLs in the kills scenario")
    args = parser.parse_args()
    rows = []
    for name in args.only or list(SCENARIOS):
        with tempfile.TemporaryDirectory(prefix=f"bench-faults-{name}-") as work:
            url = fresh_database("postgresql", Path(work), name=f"faults_{name.replace('-', '_')}")
            started = time.monotonic()
            outcome = SCENARIOS[name](Path(work), url, args)
            row = {"scenario": name, **outcome.row(), "wall_s": round(time.monotonic() - started, 1)}
            rows.append(row)
            for problem in outcome.problems():
                print(f"  {name}: {problem}")
    columns = ("scenario", "sent", "bad", "acknowledged", "lost", "unsettled", "recover_s", "settle_s")
    print(" ".join(f"{name:>12}" for name in columns), " answers")
    for row in rows:
        print(" ".join(f"{row[name]!s:>12}" for name in columns), "", row["answers"])
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
