"""The cost of a ``q`` page ranked by relevance, on a generated library (bench/relevance_data.py:
10,000 text cards, Zipf-distributed words), for keyword, natural-question and typo queries,
against Okapi BM25's retrieval of the same page size over the same cards' folded words (bm25s,
in memory), in alternating rounds in the same run: p50 and p99 of each, and their ratios. Also
how often each side's page holds the card a query was drawn from, and how many of q's pages are
empty (a typo or a question that matches no card as typed finds nothing today).

The cards are saved through ``editing.add_card`` (which indexes them) into a fresh database,
its statistics gathered (ANALYZE), and pages read through ``listing.list_cards`` as
GET /v1/cards does, in process.

    .venv/bin/python -m bench.bench_relevance [--database postgresql|sqlite] [--cards N] [--rounds R]

Prints a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import bm25s
from sqlalchemy import text

from cardvault import heap
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing, listing
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.search.words import split_words
from harness.relevance_data import GeneratedQuery, RelevanceCorpus, generate
from harness.servers import fresh_database

PAGE = 50  # GET /v1/cards's page when no limit is given
BATCH = 500  # cards saved per transaction


def load(db: Database, corpus: RelevanceCorpus) -> tuple[str, list[int]]:
    """Save the corpus's cards in one new account; return it and the cards' pks in corpus order."""
    with db.transaction() as session:
        account_id = accounts.create_account(session, name="bench-relevance").id
    pks: list[int] = []
    for start in range(0, len(corpus.cards), BATCH):
        with db.transaction() as session:
            for card in corpus.cards[start : start + BATCH]:
                pks.append(editing.add_card(session, account_id=account_id, content=card.content).card.pk)
    with db.engine.connect() as connection:  # statistics, as autovacuum would have them by now
        connection.execute(text("ANALYZE"))
        connection.commit()
    return account_id, pks


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(db: Database, corpus: RelevanceCorpus, rounds: int) -> list[dict[str, Any]]:
    """Each workload's figures, q's page and BM25's measured one query after the other."""
    account_id, pks = load(db, corpus)
    retriever = bm25s.BM25()
    retriever.index([split_words(card.content) for card in corpus.cards], show_progress=False)

    def ours(query: GeneratedQuery) -> tuple[float, bool, bool]:
        started = time.perf_counter()
        with db.transaction(write=False) as session:
            page = listing.list_cards(
                session,
                account_id=account_id,
                secret="s" * 48,
                filters=listing.CardFilter(q=query.q),
                limit=PAGE,
            )
        took = time.perf_counter() - started
        return took, pks[query.card] in {card.pk for card in page.cards}, not page.cards

    def theirs(query: GeneratedQuery) -> tuple[float, bool]:
        started = time.perf_counter()
        found, scores = retriever.retrieve([split_words(query.q)], k=PAGE, show_progress=False)
        took = time.perf_counter() - started
        return took, any(d == query.card and s > 0 for d, s in zip(found[0], scores[0], strict=True))

    workloads = {"keyword": corpus.keywords, "question": corpus.questions, "typo": corpus.typos}
    for queries in workloads.values():  # warm both sides: caches, pools, compiled statements
        for query in queries[:10]:
            ours(query)
            theirs(query)
    heap.settle()
    results = []
    for name, queries in workloads.items():
        our_times: list[float] = []
        their_times: list[float] = []
        our_found = their_found = empty = 0
        for n in range(rounds):
            for query in queries:
                took, found, was_empty = ours(query)
                our_times.append(took)
                their_took, their_hit = theirs(query)
                their_times.append(their_took)
                if n == 0:
                    our_found, their_found, empty = (
                        our_found + found,
                        their_found + their_hit,
                        empty + was_empty,
                    )
        p50, p99 = _percentile(our_times, 0.5), _percentile(our_times, 0.99)
        b50, b99 = _percentile(their_times, 0.5), _percentile(their_times, 0.99)
        results.append(
            {
                "workload": f"relevance_{name}",
                "database": db.dialect,
                "cards": len(corpus.cards),
                "queries": len(queries),
                "metric": "seconds per q page",
                "p50": round(p50, 6),
                "p99": round(p99, 6),
                "baseline_p50": round(b50, 6),
                "baseline_p99": round(b99, 6),
                "p50_ratio": round(p50 / b50, 2),
                "p99_ratio": round(p99 / b99, 2),
                "source_in_page": round(our_found / len(queries), 3),
                "baseline_source_in_page": round(their_found / len(queries), 3),
                "empty_pages": empty,
                "mean_words": round(statistics.mean(len(q.q.split()) for q in queries), 1),
            }
        )
    return results


def report(results: list[dict[str, Any]]) -> None:
    print(f"q page ({PAGE}) against bm25s {bm25s.__version__} retrieval (k={PAGE}), same cards and queries")
    print(
        f"{'workload':<12}{'words':>6}{'p50 ms':>9}{'p99 ms':>9}{'bm25 p50':>10}{'bm25 p99':>10}"
        f"{'p50 x':>8}{'p99 x':>8}{'found':>7}{'bm25':>6}{'empty':>7}"
    )
    for r in results:
        print(
            f"{r['workload'].removeprefix('relevance_'):<12}{r['mean_words']:>6}{r['p50'] * 1000:>9.2f}"
            f"{r['p99'] * 1000:>9.2f}{r['baseline_p50'] * 1000:>10.3f}{r['baseline_p99'] * 1000:>10.3f}"
            f"{r['p50_ratio']:>8.1f}{r['p99_ratio']:>8.1f}{r['source_in_page']:>7.2f}"
            f"{r['baseline_source_in_page']:>6.2f}{r['empty_pages']:>7}"
        )
    for r in results:
        print(json.dumps(r))


def run(
    kind: str, workdir: Path, *, cards: int, queries: int, rounds: int, seed: int
) -> list[dict[str, Any]]:
    """Generate the corpus, load it into a fresh database of ``kind`` and measure it."""
    corpus = generate(seed=seed, cards=cards, queries=queries)
    db = open_database(fresh_database(kind, workdir, name="relevance"))
    try:
        db.migrate()
        return measure(db, corpus, rounds)
    finally:
        db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100, help="queries of each kind")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        results = run(
            args.database,
            Path(workdir),
            cards=args.cards,
            queries=args.queries,
            rounds=args.rounds,
            seed=args.seed,
        )
    report(results)


if __name__ == "__main__":
    main()
