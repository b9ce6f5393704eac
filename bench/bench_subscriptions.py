"""Polling feed subscriptions whose feeds did not change (issue 47): 250, 500 and 1,000
subscriptions of one account, each feed served by a local server (in a process of its own)
that answers 304 to the `If-None-Match` of its last answer; our poll path (the actor's body,
cardvault.workers.subscriptions.poll: the subscription read, the SSRF-safe fetcher's
conditional GET, the 304 applied in a write transaction) against bare httpx conditional GETs
of the same feeds with the same validators, rounds alternating which side goes first.

Two baselines: a bare ``httpx.Client`` that opens a connection for each GET (as polls of 1,000
feeds on 1,000 hosts must: our fetcher opens one per poll), against which the aim is judged,
and one that keeps its connection alive to the one local server (the library at its fastest,
which no real poll of many hosts gets), reported beside it.

Aims: linear (the time per poll at 1,000 within 1.25x of that at 250), and our polls at most
2x the bare GETs, judged on the median of each round's ratio to the bare GETs beside it (the
machine's load moves both sides of a round together, and a round apart).

    .venv/bin/python -m bench.bench_subscriptions [--database postgresql|sqlite] [--sizes 250,500,1000]
        [--rounds 3]

Prints a table and one JSON line per size.
"""

from __future__ import annotations

import argparse
import http.server
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import select

from cardvault.bootstrap import bootstrap
from cardvault.domain import subscriptions
from cardvault.domain.auth import accounts
from cardvault.domain.database import open_database
from cardvault.domain.models import Subscription
from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers.subscriptions import ACCEPT, poll
from harness.servers import free_port, fresh_database

AIM = 2.0
LINEAR = 1.25
_FEED = b'<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title></channel></rss>'


class _Feeds(http.server.BaseHTTPRequestHandler):
    """``/feed/<n>.xml``: an empty RSS channel with the ETag ``"v<n>"``; 304 to that ETag."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # http.server's name
        etag = f'"v{self.path.removeprefix("/feed/").removesuffix(".xml")}"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(_FEED)))
        self.end_headers()
        self.wfile.write(_FEED)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass


def _serve(port: int) -> None:
    http.server.ThreadingHTTPServer(("127.0.0.1", port), _Feeds).serve_forever()


def _ours(services: Services, ids: list[str]) -> float:
    """Seconds per poll through the worker's path."""
    started = time.perf_counter()
    for subscription_id in ids:
        assert poll(services, subscription_id) == "unchanged"
    return (time.perf_counter() - started) / len(ids)


def _bare(feeds: list[tuple[str, str]], *, keep_alive: bool) -> float:
    """Seconds per bare conditional GET of the same feeds with the same validators."""
    limits = httpx.Limits(max_keepalive_connections=1 if keep_alive else 0)
    with httpx.Client(limits=limits, trust_env=False) as client:
        started = time.perf_counter()
        for url, etag in feeds:
            answer = client.get(url, headers={"Accept": ACCEPT, "If-None-Match": etag})
            assert answer.status_code == 304, answer.status_code
        return (time.perf_counter() - started) / len(feeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--sizes", default="250,500,1000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    port = free_port()
    server = multiprocessing.Process(target=_serve, args=(port,), daemon=True)
    server.start()
    results = []
    try:
        with tempfile.TemporaryDirectory() as workdir:
            url = fresh_database(args.database, Path(workdir), name="bench_subscriptions")
            settings = Settings.from_env(
                {
                    "CARDVAULT_DATA_DIR": workdir,
                    "CARDVAULT_DATABASE_URL": url,
                    "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
                    "CARDVAULT_FETCH_PORTS": str(port),
                }
            )
            db = open_database(url)
            db.migrate()
            bootstrap(settings, database=db)
            services = broker.services_of(broker.broker)
            with db.transaction() as session:
                account_id = accounts.create_account(session, name="bench-subscriptions").id
                ids = [
                    subscriptions.create(
                        session, account_id=account_id, url=f"http://127.0.0.1:{port}/feed/{n}.xml"
                    ).id
                    for n in range(max(sizes))
                ]
            deadline = time.monotonic() + 10
            while True:  # the server has started
                try:
                    httpx.get(f"http://127.0.0.1:{port}/feed/0.xml", trust_env=False)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the feed server did not start"
                    time.sleep(0.05)
            for subscription_id in ids:  # each first poll reads its feed and keeps its ETag
                assert poll(services, subscription_id) == "saved:0"
            with db.transaction(write=False) as session:
                rows = session.execute(select(Subscription.id, Subscription.url, Subscription.etag)).all()
            validators = {row.id: (row.url, row.etag) for row in rows}
            _ours(services, ids[: sizes[0]])  # warm: the first size is not the one that pays for it
            _bare([validators[i] for i in ids[: sizes[0]]], keep_alive=False)
            for size in sizes:
                chosen = ids[:size]
                feeds = [validators[i] for i in chosen]
                ours, fresh, kept = [], [], []
                for n in range(args.rounds):  # alternating which side goes first
                    if n % 2 == 0:
                        ours.append(_ours(services, chosen))
                        fresh.append(_bare(feeds, keep_alive=False))
                    else:
                        fresh.append(_bare(feeds, keep_alive=False))
                        ours.append(_ours(services, chosen))
                    kept.append(_bare(feeds, keep_alive=True))
                medians = (statistics.median(ours), statistics.median(fresh), statistics.median(kept))
                paired = statistics.median(o / f for o, f in zip(ours, fresh, strict=True))
                results.append((size, *medians, paired))
            db.dispose()
    finally:
        server.terminate()
        server.join(timeout=5)
    heads = ("polls", "ours ms", "bare ms", "kept ms", "ratio", "paired", "kept ratio")
    print(" ".join(f"{head:>{width}}" for head, width in zip(heads, (6, 9, 9, 9, 7, 7, 11), strict=True)))
    for size, ours_s, fresh_s, kept_s, paired in results:
        ratio, kept_ratio = ours_s / fresh_s, ours_s / kept_s
        print(
            f"{size:>6} {ours_s * 1000:>9.3f} {fresh_s * 1000:>9.3f} {kept_s * 1000:>9.3f}"
            f" {ratio:>7.2f} {paired:>7.2f} {kept_ratio:>11.2f}"
        )
    smallest, largest = results[0], results[-1]
    growth = largest[1] / smallest[1]
    for size, ours_s, fresh_s, kept_s, paired in results:
        line = {
            "workload": "subscriptions_unchanged_poll",
            "database": args.database,
            "subscriptions": size,
            "metric": "seconds per poll",
            "value": round(ours_s, 6),
            "baseline_value": round(fresh_s, 6),
            "kept_alive_baseline_value": round(kept_s, 6),
            "ratio": round(ours_s / fresh_s, 3),
            # Each round's ours over the bare GETs next to it: the machine's load moves both.
            "paired_ratio": round(paired, 3),
            "aim_ratio": AIM,
            "meets": paired <= AIM,
        }
        print(json.dumps(line))
    print(
        json.dumps(
            {
                "workload": "subscriptions_poll_linearity",
                "per_poll_growth": round(growth, 3),
                "from": smallest[0],
                "to": largest[0],
                "aim": LINEAR,
                "meets": growth <= LINEAR,
            }
        )
    )


if __name__ == "__main__":
    main()
