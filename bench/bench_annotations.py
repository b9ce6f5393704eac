"""Annotations: placing 1,000 quotes in a 512 KiB text (``anchoring.find`` with each quote's
prefix and suffix, as a card's annotations are placed again) against a bare ``str.find`` of the
same quotes (aim: at most 3x); placing them again after an edit of texts of 1, 2 and 4 MiB
(aim: linear in the text, so each doubling at most about doubles the time), as
``placing.place_again`` does (in text order, the edit's shift passed on) and with every quote
searched for in the whole text (where an edit moved each differently); and listing a
card's 1,000 annotations as listCardAnnotations reads them (``records.of_card``, p99; aim: at
most 15 ms).

    .venv/bin/python -m bench.bench_annotations [--database postgresql|sqlite] [--rounds R]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from cardvault.domain.annotations import anchoring, records
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from harness.servers import fresh_database

FIND_AIM, LIST_AIM_MS, COUNT = 3.0, 15.0, 1000
_WORDS = [
    "tide",
    "harbour",
    "water",
    "moon",
    "chart",
    "pilot",
    "buoy",
    "keel",
    "stern",
    "mast",
    "rope",
    "anchor",
    "gull",
    "wave",
    "sand",
    "reef",
]


def _text(size: int, seed: int = 7) -> str:
    chooser = random.Random(seed)  # noqa: S311 -- repeatable bench data, not secrets
    words: list[str] = []
    length = 0
    while length < size:
        word = chooser.choice(_WORDS) + str(chooser.randrange(1000))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def _quotes(text: str, count: int = COUNT, seed: int = 11) -> list[tuple[str, str, str, int]]:
    """Quotes of 20 to 80 characters at random places: (quote, prefix, suffix, start)."""
    chooser = random.Random(seed)  # noqa: S311 -- repeatable bench data, not secrets
    found = []
    for _ in range(count):
        start = chooser.randrange(0, len(text) - 100)
        quote = text[start : start + chooser.randrange(20, 80)]
        prefix, suffix = anchoring.context(text, anchoring.Anchor(start, start + len(quote)))
        found.append((quote, prefix, suffix, start))
    return found


def _finding(text: str, quotes: list[tuple[str, str, str, int]]) -> tuple[float, float]:
    started = time.perf_counter()
    for quote, _, _, _ in quotes:
        text.find(quote)
    bare = time.perf_counter() - started
    started = time.perf_counter()
    for quote, prefix, suffix, _ in quotes:  # as createAnnotation places a new one: from nowhere
        anchoring.find(text, quote, prefix=prefix, suffix=suffix)
    return time.perf_counter() - started, bare


def _placing_again(size: int, *, searched: bool = False) -> float:
    """Seconds to place 1,000 quotes again in a text of ``size`` edited near its start, as
    ``placing.place_again`` does (in text order, each passing the edit's shift on), or each
    searched for in the whole text (``searched``: where an edit moved every quote differently)."""
    before = _text(size)
    quotes = sorted(_quotes(before), key=lambda q: q[3])
    after = "A new opening paragraph. " + before
    in_order = [anchoring.Quoted(quote, prefix, suffix, start) for quote, prefix, suffix, start in quotes]
    started = time.perf_counter()
    if searched:
        placed = [anchoring.find(after, q.quote, prefix=q.prefix, suffix=q.suffix) for q in in_order]
    else:
        placed = anchoring.place_all(after, in_order)
    elapsed = time.perf_counter() - started
    assert all(anchor is not None for anchor in placed)
    return elapsed


def _listing(database: str, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory() as workdir:
        db = open_database(fresh_database(database, Path(workdir), name="annotations"))
        db.migrate()
        text = _text(512 * 1024)
        with db.transaction() as session:
            account = accounts.create_account(session, name="bench").id
            card = editing.add_card(session, account_id=account, content=text).card.id
        quotes = _quotes(text)
        for first in range(0, COUNT, 200):
            with db.transaction() as session:
                for quote, prefix, _, _ in quotes[first : first + 200]:
                    records.create(
                        session, account_id=account, card_id=card, quote=quote, prefix=prefix, indexed=False
                    )
        timings = []
        for round_ in range(rounds + 3):  # the first three warm the caches, uncounted
            started = time.perf_counter()
            with db.transaction(write=False) as session:
                assert len(records.of_card(session, account_id=account, card_id=card)) == COUNT
            if round_ >= 3:
                timings.append((time.perf_counter() - started) * 1000)
        db.engine.dispose()
        return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    text = _text(512 * 1024)
    quotes = _quotes(text)
    finds = [_finding(text, quotes) for _ in range(5)]
    ours, bare = statistics.median(f[0] for f in finds), statistics.median(f[1] for f in finds)
    again = {size: min(_placing_again(size << 20) for _ in range(3)) for size in (1, 2, 4)}
    searched = {size: min(_placing_again(size << 20, searched=True) for _ in range(3)) for size in (1, 2, 4)}
    listed = sorted(_listing(args.database, args.rounds))
    p50, p99 = listed[len(listed) // 2], listed[min(len(listed) - 1, int(len(listed) * 0.99))]
    ratio = ours / bare
    print(f"{'measure':<40}{'value':>12}")
    print(f"{'placing 1,000 quotes in 512 KiB (s)':<40}{ours:>12.4f}")
    print(f"{'bare str.find of the same (s)':<40}{bare:>12.4f}")
    print(f"{'ratio (aim <= 3x)':<40}{ratio:>12.2f}")
    for size, seconds in again.items():
        print(f"{f'placing again, {size} MiB (s)':<40}{seconds:>12.4f}")
    for size, seconds in searched.items():
        print(f"{f'each searched again, {size} MiB (s)':<40}{seconds:>12.4f}")
    print(f"{'listing 1,000, p50 (ms)':<40}{p50:>12.2f}")
    print(f"{'listing 1,000, p99 (ms; aim <= 15)':<40}{p99:>12.2f}")
    print(
        json.dumps(
            {
                "bench": "annotations",
                "database": args.database,
                "find_ratio": round(ratio, 3),
                "find_aim": FIND_AIM,
                "again_seconds": {f"{size}MiB": round(s, 4) for size, s in again.items()},
                "searched_seconds": {f"{size}MiB": round(s, 4) for size, s in searched.items()},
                "list_p50_ms": round(p50, 2),
                "list_p99_ms": round(p99, 2),
                "list_aim_ms": LIST_AIM_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
