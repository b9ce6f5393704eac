"""The changes feed's cost to a write: card updates (``editing.update_card``, one card's notes
per transaction, as PATCH /v1/cards/{id} does) with their change recorded in the same
transaction (the account's counter raised and locked until COMMIT, the card's earlier change
replaced by its new one), against the same updates on a Database whose sessions record no
change, in alternating rounds, on the same database; aim: at most 1.15x.

    .venv/bin/python -m bench.bench_changes [--database postgresql|sqlite] [--updates N] [--rounds R]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import event

from cardvault import heap
from cardvault.domain import changes
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from harness.servers import fresh_database

AIM = 1.15


def _without_changes(url: str) -> Database:
    """A Database on the same URL whose writing sessions record no change (the baseline)."""
    db = open_database(url)
    sessions = db._write_sessions  # (the baseline takes the recorder off)
    for name, listener in (
        ("after_flush", changes._collect),
        ("before_commit", changes._record),
        ("after_transaction_create", changes._savepoint_begins),
        ("after_soft_rollback", changes._rolled_back),
    ):
        event.remove(sessions, name, listener)
    return db


def _updates(db: Database, account_id: str, card_ids: list[str], count: int) -> float:
    """Seconds per update, over ``count`` updates cycling through the cards."""
    started = time.perf_counter()
    for n in range(count):
        with db.transaction() as session:
            editing.update_card(
                session, account_id=account_id, card_id=card_ids[n % len(card_ids)], notes=f"n{n}"
            )
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--updates", type=int, default=1000, help="updates per round")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir), name="changes")
        recording = open_database(url)
        recording.migrate()
        bare = _without_changes(url)
        with recording.transaction() as session:
            account_id = accounts.create_account(session, name="bench").id
            card_ids = [
                editing.add_card(session, account_id=account_id, content=f"card {n}").card.id
                for n in range(200)
            ]
        _updates(recording, account_id, card_ids, 100)  # warm both pools and caches
        _updates(bare, account_id, card_ids, 100)
        heap.settle()  # as a server process does once it has started (cardvault.heap)
        ours, base = [], []
        for _ in range(args.rounds):
            base.append(_updates(bare, account_id, card_ids, args.updates))
            ours.append(_updates(recording, account_id, card_ids, args.updates))
        recording.dispose()
        bare.dispose()
    ratio = statistics.median(ours) / statistics.median(base)
    rounds = [round(o / b, 3) for o, b in zip(ours, base, strict=True)]
    print(f"{'side':<18}{'ms/update':>10}")
    print(f"{'with its change':<18}{statistics.median(ours) * 1000:>10.3f}")
    print(f"{'without':<18}{statistics.median(base) * 1000:>10.3f}")
    verdict = "meets" if ratio <= AIM else "misses"
    print(f"time ratio {ratio:.3f} (rounds {rounds}): {verdict} the aim of at most {AIM}x")
    print(
        json.dumps(
            {
                "workload": "card_update_with_change",
                "database": args.database,
                "metric": "seconds per update",
                "value": round(statistics.median(ours), 6),
                "baseline_value": round(statistics.median(base), 6),
                "time_ratio": round(ratio, 3),
                "round_ratios": rounds,
                "aim_ratio": AIM,
                "meets": ratio <= AIM,
            }
        )
    )


if __name__ == "__main__":
    main()
