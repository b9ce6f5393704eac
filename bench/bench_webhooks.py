"""Webhook fan-out: deliveries of one account's events to several endpoints, made as the worker
makes them (``deliver_webhooks``: an endpoint's due deliveries taken in a batch under one lease,
signed, POSTed through the SSRF-safe fetcher over one connection, their outcomes recorded),
against the same bodies POSTed by a bare ``httpx.Client`` (connections kept alive) to the same
local receiver, one at a time on both sides; aim: our deliveries at least 0.5x the bare posts'
rate. Also reported: the dispatch (changes turned into deliveries) per event.

    .venv/bin/python -m bench.bench_webhooks [--database postgresql|sqlite] [--events N] [--endpoints M]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import select

from cardvault.bootstrap import bootstrap
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.models import WebhookDelivery
from cardvault.domain.webhooks import endpoints, events
from cardvault.settings import Settings
from cardvault.workers.webhooks import BATCH, deliver_webhooks
from harness.servers import fresh_database, page_server

AIM = 0.5


def _delivered(webhook_ids: list[str], count: int) -> float:
    """Seconds per delivery, each endpoint's made as the worker makes them (in batches)."""
    started = time.perf_counter()
    for webhook_id in webhook_ids:
        for _ in range(count // BATCH + 2):  # as the actor sends itself again while more are due
            deliver_webhooks.fn(webhook_id)
    return (time.perf_counter() - started) / count


def _bare(url: str, bodies: list[str]) -> float:
    """Seconds per bare POST of the same bodies through one httpx client (its connections kept
    alive: the library at its fastest)."""
    with httpx.Client() as client:
        started = time.perf_counter()
        for body in bodies:
            answer = client.post(url, content=body.encode(), headers={"content-type": "application/json"})
            assert answer.status_code == 200
        return (time.perf_counter() - started) / len(bodies)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--events", type=int, default=2500, help="changes a round")
    parser.add_argument("--endpoints", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, page_server() as receiver:
        receiver.routes["/hook"] = (200, {"Content-Type": "text/plain"}, b"ok")
        url = fresh_database(args.database, Path(workdir), name="webhooks")
        settings = Settings.from_env(
            {
                "CARDVAULT_DATA_DIR": workdir,
                "CARDVAULT_DATABASE_URL": url,
                "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
                "CARDVAULT_FETCH_PORTS": str(receiver.port),
            }
        )
        db = open_database(url)
        db.migrate()
        bootstrap(settings, database=db)
        with db.transaction() as session:
            account_id = accounts.create_account(session, name="bench").id
            for _ in range(args.endpoints):
                endpoints.create(
                    session, account_id=account_id, url=receiver.url("/hook"), events=["*"], description=""
                )
        with db.transaction(write=False) as session:
            hooks = [w.id for w in endpoints.list_all(session, account_id=account_id)]
        ours, base, dispatch = [], [], []
        for _ in range(args.rounds):
            with db.transaction() as session:
                for n in range(args.events):
                    editing.add_card(session, account_id=account_id, content=f"card {n}")
            started = time.perf_counter()
            made: list[str] = []
            more = True
            while more:
                with db.transaction() as session:
                    batch, more = events.dispatch(session, account_id=account_id)
                    made += [delivery.id for delivery in batch]
            dispatch.append((time.perf_counter() - started) / args.events)
            with db.transaction(write=False) as session:
                bodies = list(
                    session.scalars(select(WebhookDelivery.body).where(WebhookDelivery.id.in_(made)))
                )
            base.append(_bare(receiver.url("/hook"), bodies))
            ours.append(_delivered(hooks, len(made)))
        with db.transaction(write=False) as session:
            statuses = set(session.scalars(select(WebhookDelivery.status)))
        assert statuses == {"succeeded"}, statuses
        db.dispose()
    rate = statistics.median(base) / statistics.median(ours)  # ours per second over bare per second
    rounds = [round(b / o, 3) for o, b in zip(ours, base, strict=True)]
    print(f"{'side':<26}{'ms each':>10}")
    print(f"{'delivery (worker path)':<26}{statistics.median(ours) * 1000:>10.3f}")
    print(f"{'bare httpx.Client.post':<26}{statistics.median(base) * 1000:>10.3f}")
    print(f"{'dispatch, per change':<26}{statistics.median(dispatch) * 1000:>10.3f}")
    verdict = "meets" if rate >= AIM else "misses"
    print(f"rate ratio {rate:.3f} (rounds {rounds}): {verdict} the aim of at least {AIM}x")
    print(
        json.dumps(
            {
                "workload": "webhook_fan_out",
                "database": args.database,
                "endpoints": args.endpoints,
                "metric": "seconds per delivery",
                "value": round(statistics.median(ours), 6),
                "baseline_value": round(statistics.median(base), 6),
                "dispatch_seconds_per_change": round(statistics.median(dispatch), 6),
                "rate_ratio": round(rate, 3),
                "round_ratios": rounds,
                "aim_ratio": AIM,
                "meets": rate >= AIM,
            }
        )
    )


if __name__ == "__main__":
    main()
