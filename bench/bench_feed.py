"""Reading the changes feed: an account's whole feed of N card changes (default 100,000), page by
page (200 a page) as listChanges reads it (``feed.read`` and ``feed.resources``, the cards with
their processing stages, in one snapshot per page), against the same rows read with raw SQL through the
driver (each page's changes by keyset, then its cards, their tags, folders and stages by id); aim:
at most 1.5x.

    .venv/bin/python -m bench.bench_feed [--database postgresql|sqlite] [--cards N] [--rounds R]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from cardvault import heap
from cardvault.domain import feed
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from harness.servers import fresh_database

AIM = 1.5
PAGE = 200
SECRET = "s" * 48


def _ours(db: Database, account_id: str) -> tuple[float, int, int]:
    """Seconds for the whole feed as listChanges reads it, how many changes and how many cards
    it found (checked after the timing, by the caller)."""
    started, cursor, read, cards = time.perf_counter(), None, 0, 0
    while True:
        with db.transaction(write=False) as session:
            page = feed.read(session, account_id=account_id, secret=SECRET, cursor=cursor, limit=PAGE)
            cards += len(feed.resources(session, account_id=account_id, changes=page.changes).cards)
        read += len(page.changes)
        cursor = page.next_cursor
        if not page.has_more:
            return time.perf_counter() - started, read, cards


def _raw(db: Database, account_id: str) -> tuple[float, int]:
    """The same rows by raw SQL through the driver (no ORM, no cursor signing)."""
    postgres = db.engine.dialect.name == "postgresql"
    mark = "%s" if postgres else "?"

    def listed(values: list[Any]) -> str:
        return ", ".join([mark] * len(values))

    started, after, read = time.perf_counter(), 0, 0
    with db.engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert raw is not None
        while True:
            cursor = raw.cursor()
            cursor.execute(
                f"SELECT * FROM changes WHERE account_id = {mark} AND sequence > {mark} "
                f"ORDER BY sequence LIMIT {mark}",
                (account_id, after, PAGE + 1),
            )
            rows = cursor.fetchall()[:PAGE]
            ids = [row[3] for row in rows]
            cursor.execute(
                f"SELECT pk, * FROM cards WHERE account_id = {mark} AND id IN ({listed(ids)})",
                (account_id, *ids),
            )
            cards = cursor.fetchall()
            pks = [card[0] for card in cards]
            for table in ("card_tags", "folder_cards", "card_stages"):
                cursor.execute(f"SELECT * FROM {table} WHERE card_pk IN ({listed(pks)})", pks)
                cursor.fetchall()
            raw.commit()
            read += len(rows)
            if len(rows) < PAGE:
                return time.perf_counter() - started, read
            after = rows[-1][1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        db = open_database(fresh_database(args.database, Path(workdir), name="feed"))
        db.migrate()
        with db.transaction() as session:
            account_id = accounts.create_account(session, name="bench").id
        for start in range(0, args.cards, 1000):
            with db.transaction() as session:
                for n in range(start, min(args.cards, start + 1000)):
                    editing.add_card(session, account_id=account_id, content=f"card {n}", tags=[f"t{n % 50}"])
        with db.engine.connect() as connection:  # as autovacuum would, before anything is read
            connection.execute(text("ANALYZE"))
            connection.commit()
        heap.settle()  # as a server process does once it has started (cardvault.heap)
        ours, base = [], []
        for _ in range(args.rounds):
            took, read = _raw(db, account_id)
            assert read == args.cards + 50, read  # the cards, and their 50 tags
            base.append(took)
            took, read, cards = _ours(db, account_id)
            assert (read, cards) == (args.cards + 50, args.cards), (read, cards)
            ours.append(took)
        db.dispose()
    ratio = statistics.median(ours) / statistics.median(base)
    rounds = [round(o / b, 3) for o, b in zip(ours, base, strict=True)]
    print(f"{'side':<22}{'seconds':>10}")
    print(f"{'feed as listChanges':<22}{statistics.median(ours):>10.3f}")
    print(f"{'raw SQL':<22}{statistics.median(base):>10.3f}")
    verdict = "meets" if ratio <= AIM else "misses"
    print(f"time ratio {ratio:.3f} (rounds {rounds}): {verdict} the aim of at most {AIM}x")
    print(
        json.dumps(
            {
                "workload": "changes_feed_read",
                "database": args.database,
                "changes": args.cards,
                "metric": "seconds for the whole feed",
                "value": round(statistics.median(ours), 4),
                "baseline_value": round(statistics.median(base), 4),
                "time_ratio": round(ratio, 3),
                "round_ratios": rounds,
                "aim_ratio": AIM,
                "meets": ratio <= AIM,
            }
        )
    )


if __name__ == "__main__":
    main()
