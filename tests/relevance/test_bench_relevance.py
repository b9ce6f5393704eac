"""The ranking-cost bench's generated library (harness/relevance_data.py) is what it says, and the
bench (bench/bench_relevance.py) runs end to end on a small one, as its command line runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from harness.relevance_data import STOP_WORDS, generate

ROOT = Path(__file__).resolve().parents[2]


def _edits(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and transpositions of neighbours from a to b."""
    rows = [list(range(len(b) + 1))] + [[i] + [0] * len(b) for i in range(1, len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            rows[i][j] = min(
                rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def test_the_same_seed_gives_the_same_library_and_another_seed_another() -> None:
    assert generate(seed=5, cards=200, queries=20) == generate(seed=5, cards=200, queries=20)
    assert generate(seed=6, cards=200, queries=20).cards != generate(seed=5, cards=200, queries=20).cards


def test_words_fall_off_by_rank_and_stop_words_take_their_share() -> None:
    corpus = generate(seed=1, cards=2_000, queries=10)
    words = [w for card in corpus.cards for w in card.body.split()]
    counts = Counter(w for w in words if w in corpus.vocabulary).most_common()
    assert counts[0][1] > 8 * counts[9][1] > 8 * 8 * counts[999][1] > 0  # Zipf-like: about 1 / rank
    assert 0.3 < sum(w in STOP_WORDS for w in words) / len(words) < 0.4


def test_each_query_is_drawn_from_its_card() -> None:
    corpus = generate(seed=2, cards=1_000, queries=100)
    assert len(corpus.keywords) == len(corpus.questions) == len(corpus.typos) == 100

    def held(index: int) -> set[str]:
        card = corpus.cards[index]
        return set(f"{card.title.lower()} {card.body}".split())

    for query in corpus.keywords:
        assert 1 <= len(query.q.split()) <= 3 and set(query.q.split()) <= set(
            corpus.cards[query.card].title.lower().split()
        )
    for query in corpus.questions:
        assert 8 <= len(query.q.split()) <= 12, query
        assert len(set(query.q.split()) & held(query.card) - set(STOP_WORDS)) >= 3, query
    for query in corpus.typos:
        wrong, *rest = query.q.split()
        assert wrong not in corpus.vocabulary and set(rest) <= held(query.card), query
        meant = [
            w for w in held(query.card) if w[0] == wrong[0] and _edits(w, wrong) <= (2 if len(w) >= 9 else 1)
        ]
        assert meant, query


def test_the_bench_measures_each_workload_against_bm25() -> None:
    small = ["--database", "sqlite", "--cards", "300", "--queries", "10", "--rounds", "1", "--seed", "3"]
    command = [sys.executable, "-m", "bench.bench_relevance", *small]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["workload"] for r in results] == ["relevance_keyword", "relevance_question", "relevance_typo"]
    for result in results:
        assert result["cards"] == 300 and result["queries"] == 10
        assert 0 < result["p50"] <= result["p99"] and 0 < result["baseline_p50"] <= result["baseline_p99"]
    assert 8 <= results[1]["mean_words"] <= 12
    assert results[0]["baseline_source_in_page"] > 0.5  # BM25 finds keyword queries' cards
