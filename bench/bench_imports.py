"""Imports: N bookmarks (default 30,000) of a Netscape file imported by the worker's actor
(``run_import``: the file streamed from the blob store, 200 entries per transaction, the
duplicate lookup, the folder, the link stages queued and sent) against the same cards made by
the domain function a client's createCard uses (``editing.add_card``, its stages queued and
sent) in a loop, in transactions of 200; aim: at most 1.5x the time. And the import's peak RSS
above the process's RSS before it (aim: at most 64 MiB), measured first, in a fresh process.
Messages go to Redis (as in production: the machine's, database 14, emptied after).

    .venv/bin/python -m bench.bench_imports [--database sqlite|postgresql] [--entries N] [--rounds R]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

REDIS_URL = "redis://127.0.0.1:6379/14"
os.environ.setdefault("CARDVAULT_REDIS_URL", REDIS_URL)  # before the broker is built

from cardvault import heap  # noqa: E402
from cardvault.adapters.blobs.local import LocalDiskStore  # noqa: E402
from cardvault.bootstrap import bootstrap  # noqa: E402
from cardvault.domain.auth import accounts  # noqa: E402
from cardvault.domain.cards import editing  # noqa: E402
from cardvault.domain.database import open_database  # noqa: E402
from cardvault.domain.db import Database  # noqa: E402
from cardvault.domain.models import ImportJob  # noqa: E402
from cardvault.domain.pipeline import processing  # noqa: E402
from cardvault.domain.portability.imports import jobs as import_jobs  # noqa: E402
from cardvault.settings import Settings  # noqa: E402
from cardvault.workers import actors, broker  # noqa: E402, F401  (actors: declares every actor)
from cardvault.workers.imports import run_import  # noqa: E402
from cardvault.workers.pipeline import send_stage  # noqa: E402
from harness.servers import fresh_database  # noqa: E402

AIM, RSS_AIM_MIB = 1.5, 64


def bookmarks(count: int, round_no: int) -> bytes:
    """A browser's bookmark file: ``count`` pages in 20 folders (a round's own URLs)."""
    lines = [b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"]
    for folder in range(20):
        lines.append(b'<DT><H3 ADD_DATE="1700000000">Folder %d</H3>\n<DL><p>\n' % folder)
        for n in range(folder, count, 20):
            lines.append(
                b'<DT><A HREF="https://example.com/%d/%d" ADD_DATE="1700000000" TAGS="t%d">Page %d</A>\n'
                % (round_no, n, n % 50, n)
            )
        lines.append(b"</DL><p>\n")
    lines.append(b"</DL><p>\n")
    return b"".join(lines)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _import(db: Database, store: LocalDiskStore, account_id: str, data: bytes) -> float:
    """Seconds for the actor to take the whole file (it hands over after each time slice)."""
    import_id = import_jobs.new_import_id()
    key = f"accounts/{account_id}/imports/{import_id}/bookmarks.html"
    store.put(key, data, content_type="text/html")
    with db.transaction() as session:
        session.add(
            import_jobs.new_job(
                import_id=import_id,
                account_id=account_id,
                file_format="netscape",
                on_duplicate="skip",
                file_name="bookmarks.html",
                file_size=len(data),
                object_key=key,
            )
        )
    started, handed = time.perf_counter(), None
    while True:
        run_import.fn(import_id, handed)
        with db.transaction(write=False) as session:
            job = session.get(ImportJob, import_id)
            assert job is not None
            if job.status != "running":
                assert job.status == "completed" and job.failed == 0, (job.status, job.failures[:3])
                return time.perf_counter() - started
            handed = job.lease  # its slice ended: the next message carries its lease


def _loop(db: Database, account_id: str, count: int, round_no: int) -> float:
    """Seconds for the same cards made by editing.add_card, 200 a transaction."""
    started = time.perf_counter()
    for start in range(0, count, import_jobs.BATCH_SIZE):
        sent = []
        with db.transaction() as session:
            for n in range(start, min(count, start + import_jobs.BATCH_SIZE)):
                url = f"https://example.com/{round_no}/{n}"
                card = editing.add_card(
                    session, account_id=account_id, content=url, url=url, tags=[f"t{n % 50}"], created_at=1
                ).card
                sent += [(card.pk, stage) for stage in processing.queue(session, card)]
        for card_pk, stage in sent:
            send_stage(card_pk, stage)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="sqlite")
    parser.add_argument("--entries", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir), name="imports")
        db = open_database(url)
        db.migrate()
        store = LocalDiskStore(Path(workdir) / "blobs", secret_key="s" * 48, public_url="http://127.0.0.1:1")
        bootstrap(Settings.from_env(), database=db, blobs=store)
        redis = broker.broker.client  # type: ignore[attr-defined]
        with db.transaction() as session:
            account_id = accounts.create_account(session, name="bench").id
        heap.settle()  # as a worker process does once it has started
        idle = _rss_mib()
        first = bookmarks(args.entries, 0)
        ours, base = [_import(db, store, account_id, first)], []
        grown = _rss_mib() - idle  # the first import, in a process that had done nothing else
        for round_no in range(1, args.rounds + 1):
            base.append(_loop(db, account_id, args.entries, 1000 + round_no))
            if round_no > 1:
                ours.append(_import(db, store, account_id, bookmarks(args.entries, round_no)))
        redis.flushdb()
        db.dispose()
    ratio = statistics.median(ours) / statistics.median(base)
    print(f"{'side':<26}{'seconds':>10}")
    print(f"{'import (run_import)':<26}{statistics.median(ours):>10.3f}")
    print(f"{'editing.add_card loop':<26}{statistics.median(base):>10.3f}")
    verdict = "meets" if ratio <= AIM else "misses"
    print(f"time ratio {ratio:.3f}: {verdict} the aim of at most {AIM}x")
    rss_verdict = "meets" if grown <= RSS_AIM_MIB else "misses"
    print(f"peak RSS above idle {grown:.1f} MiB: {rss_verdict} the aim of at most {RSS_AIM_MIB} MiB")
    print(
        json.dumps(
            {
                "workload": "import_netscape",
                "database": args.database,
                "entries": args.entries,
                "metric": "seconds for the whole file",
                "value": round(statistics.median(ours), 4),
                "baseline_value": round(statistics.median(base), 4),
                "time_ratio": round(ratio, 3),
                "aim_ratio": AIM,
                "peak_rss_above_idle_mib": round(grown, 1),
                "rss_aim_mib": RSS_AIM_MIB,
                "meets": ratio <= AIM and grown <= RSS_AIM_MIB,
            }
        )
    )


if __name__ == "__main__":
    main()
