"""Lists and search at scale: one account of 1,000,000 cards beside 99 accounts of 10,000 on
PostgreSQL (100,000 beside 9 of 10,000 on SQLite), with tags, AI tags, search rows, folders,
favorites, archive and Trash in realistic proportions (bench/scale_data.py), loaded in the
schema of BASE_REVISION; the later migrations then run on the full tables, timed, and the
statistics are gathered (ANALYZE), as a long-lived database has them.

One uvicorn process serves the API, pinned to CPU 0; the load generator runs on CPU 1. For
every workload it measures p50 and p99 with 1 client and with 16, prints a table and one JSON
line per workload, and prints the query plans (EXPLAIN ANALYZE; SQLite: EXPLAIN QUERY PLAN) of
every workload over its target.

The q workloads: one common word (by relevance and newest first), a rare one, a phrase, a word
with qualifiers, with highlights; a natural question (q_question: 10 words, common and rare words
of the data with stop words between, so few cards hold them all and the cards holding some are
ranked); a typo (q_typo: a word of the data with one edit, so no card holds it as typed); and the
longest q the spec allows (1,024 characters) of distinct misspellings, common words and rare
words (q_longest_typos, q_longest_common, q_longest_rare: the first 48 words count). Smart
folders (smart_common, smart_rare, smart_qualifiers: saved searches of q_common's, q_rare's and
q_qualifiers' queries) are listed with folder=, within the budget of their query. Each
migration after BASE_REVISION is timed on its own (0030 counts the search vocabulary,
``search_words`` and ``cards.search_words``, from the index rows), and the vocabulary it made is
checked against the generated data.

    .venv/bin/python -m bench.bench_scale [--database postgresql|sqlite] [--cards N]
        [--accounts N] [--account-cards N] [--seconds S] [--reuse]

--reuse keeps the loaded database from an earlier run (and skips the migration timing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import redis
from sqlalchemy import create_engine, event, text

from bench.load import LoadResult, run_load
from bench.scale_load import BASE_REVISION, load_postgresql, load_sqlite
from cardvault.domain import folders
from cardvault.domain.auth import keys
from cardvault.domain.cards import listing
from cardvault.domain.database import open_database
from cardvault.domain.db import MIGRATIONS, Database
from cardvault.domain.tags import operations
from harness.scale_data import Generator, Stats
from harness.servers import POSTGRES, free_port, start_uvicorn

WORKDIR = Path(os.environ.get("CARDVAULT_BENCH_SCALE_DIR") or Path(tempfile.gettempdir()) / "cardvault-scale")
DATABASE = "cardvault_scale"
# p99 targets in ms for PostgreSQL at 1M cards, one API process, one client; SQLite gets 2x.
TARGETS = {
    "q_common": 60.0,
    "q_common_newest": 60.0,
    "q_rare": 30.0,
    "q_phrase": 60.0,
    "q_qualifiers": 60.0,
    "q_highlights": 80.0,
    "q_question": 60.0,
    "q_typo": 60.0,
    "q_longest_typos": 60.0,
    "q_longest_common": 60.0,
    "q_longest_rare": 60.0,
    # A smart folder's cards are its query's matches: listed within the q budget of its query.
    "smart_common": 60.0,
    "smart_rare": 30.0,
    "smart_qualifiers": 60.0,
}
# The smart folders of the measured account, each listed with folder= (made once the
# migrations ran): the name of its workload and the q workload whose query it keeps.
SMART = {"smart_common": "q_common", "smart_rare": "q_rare", "smart_qualifiers": "q_qualifiers"}
MAX_Q = 1024  # the spec's maxLength of q
# Stop words between a question's words (cardvault.domain.search.stopwords: they decide nothing).
QUESTION = "how {0} the {1} with {2} for {3} in {4}"
LIST_TARGET = 15.0
REDIS_SCRATCH = "redis://127.0.0.1:6379/15"  # a database of the machine's Redis, flushed after


def _fresh_database(kind: str, reuse: bool) -> str:
    WORKDIR.mkdir(parents=True, exist_ok=True)
    if kind == "sqlite":
        path = WORKDIR / "scale.db"
        if not reuse:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return f"sqlite:///{path}"
    if not reuse:
        engine = create_engine(POSTGRES, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))
            connection.execute(text(f"CREATE DATABASE {DATABASE}"))
        engine.dispose()
    return POSTGRES.rsplit("/", 1)[0] + "/" + DATABASE


def _closest(counter: dict[str, int], wanted: float, keep: Callable[[str], bool] = lambda _: True) -> str:
    return min((k for k in counter if keep(k)), key=lambda k: (abs(counter[k] - wanted), k))


def _load(url: str, kind: str, sizes: list[int]) -> dict[str, Any]:
    """Load the data, migrate to head (timed), gather statistics; return what the workloads need."""
    db = open_database(url)
    db.migrate(revision=BASE_REVISION)
    gen, stats = Generator(), Stats()
    started = time.perf_counter()
    print(f"loading {sum(sizes):,} cards in {len(sizes)} accounts ...", flush=True)
    loader = load_postgresql if kind == "postgresql" else load_sqlite
    big = loader(url if kind == "postgresql" else url.removeprefix("sqlite:///"), sizes, gen, stats)
    loaded = time.perf_counter() - started
    _analyze(db)
    steps = _timed_migrations(db)
    _analyze(db)
    live = sizes[0]
    common = _closest(stats.words, 0.10 * live)
    # The commonest words of the cards' texts (not of their URLs).
    commonest = [word for word, _ in stats.words.most_common(500) if word not in ("https", "example")]
    first, second = commonest[:2]  # side by side: the phrase
    rare = _closest(stats.words, 30, keep=lambda w: len(w) >= 8)
    rares = sorted((w for w in stats.words if len(w) >= 8), key=lambda w: (abs(stats.words[w] - 30), w))
    typed = _closest(stats.words, 0.01 * live, keep=lambda w: len(w) >= 6)
    typo = _misspelt(typed)
    assert typo not in stats.words
    question = QUESTION.format(commonest[2], rares[1], commonest[5], rares[2], commonest[9])
    meta = {
        **big,
        "cards": sizes[0],
        "load_seconds": round(loaded, 1),
        "migration_seconds": round(sum(steps.values()), 2),
        "migration_0030_seconds": steps.get("0030"),
        "slowest_migrations": dict(sorted(steps.items(), key=lambda item: -item[1])[:5]),
        "vocabulary": _vocabulary(db, big["account_id"], stats, [common, rare, typed]),
        "common_word": [common, stats.words[common]],
        "question": question,
        "typo": [typo, typed, stats.words[typed]],
        "longest_typos": _longest([_misspelt(w) for w in commonest if len(w) >= 5]),
        "longest_common": _longest(commonest),
        "longest_rare": _longest(rares),
        "phrase": f'"{first} {second}"',  # the two commonest words, side by side
        "rare_word": [rare, stats.words[rare]],
        "tag": (tag := _closest(stats.tags, 0.01 * live)),
        "tag_cards": stats.tags[tag],
        "folder": (folder := stats.folders.most_common(1)[0][0]),
        "folder_cards": stats.folders[folder],
        "common_tag": stats.tags.most_common(1)[0][0],
    }
    db.dispose()
    return meta


def _misspelt(word: str) -> str:
    """The word with one edit not on its first letter: its third letter replaced by one no
    generated word holds (they are made of consonant-vowel syllables without x)."""
    return word[:2] + "x" + word[3:]


def _longest(words: list[str]) -> str:
    """Distinct words joined up to q's maxLength, the last one cut to fill it exactly."""
    q = " ".join(dict.fromkeys(words))
    assert len(q) >= MAX_Q, "too few words for the longest q"
    return q[:MAX_Q]


def _timed_migrations(db: Database) -> dict[str, float]:
    """Apply the migrations after BASE_REVISION one at a time; the seconds of each."""
    revisions = sorted(
        found.group(1)
        for path in (Path(MIGRATIONS) / "versions").glob("*.py")
        if (found := re.match(r"(\d{4})_", path.name)) and found.group(1) > BASE_REVISION
    )
    steps = {}
    for revision in revisions:
        started = time.perf_counter()
        db.migrate(revision=revision)
        steps[revision] = round(time.perf_counter() - started, 2)
        print(f"migration {revision}: {steps[revision]:.2f} s", flush=True)
    return steps


def _vocabulary(db: Database, account_id: str, stats: Stats, words: list[str]) -> dict[str, Any]:
    """What migration 0030 counted for the measured account, beside the generated data: its
    words, its cards with a length, and the cards of a few words (the vocabulary counts cards in
    the archive and Trash too, the generated counts do not)."""
    with db.engine.connect() as connection:
        held = connection.execute(
            text("SELECT count(*) FROM search_words WHERE account_id = :a AND cards > 0"), {"a": account_id}
        ).scalar()
        lengths = connection.execute(
            text("SELECT count(*), avg(search_words) FROM cards WHERE account_id = :a AND search_words > 0"),
            {"a": account_id},
        ).one()
        counted = {
            word: [
                connection.execute(
                    text("SELECT cards FROM search_words WHERE account_id = :a AND word = :w"),
                    {"a": account_id, "w": word},
                ).scalar(),
                stats.words[word],
            ]
            for word in words
        }
    return {
        "words": held,
        "generated_words": len(stats.words),
        "cards_with_length": lengths[0],
        "average_length": round(float(lengths[1] or 0), 1),
        "cards_of_words_counted_vs_generated": counted,
    }


def _analyze(db: Database) -> None:
    with db.engine.connect() as connection:
        connection.execute(text("ANALYZE"))
        connection.commit()


def _workloads(meta: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        "first_page": {},
        "page_200": {},  # the cursor is filled in by walking there
        "q_common": {"q": meta["common_word"][0]},  # by relevance, the default with words
        "q_common_newest": {"q": meta["common_word"][0], "sort": "newest"},
        "q_rare": {"q": meta["rare_word"][0]},
        "q_phrase": {"q": meta["phrase"]},
        "q_qualifiers": {"q": f"{meta['common_word'][0]} type:link -tag:{meta['common_tag']} -is:favorite"},
        "q_highlights": {"q": meta["common_word"][0], "include": "highlights"},
        "q_question": {"q": meta["question"]},
        "q_typo": {"q": meta["typo"][0]},
        "q_longest_typos": {"q": meta["longest_typos"]},
        "q_longest_common": {"q": meta["longest_common"]},
        "q_longest_rare": {"q": meta["longest_rare"]},
        "tag": {"tag": meta["tag"]},
        "favorited": {"favorited": "true"},
        "type": {"type": "video"},
        "folder": {"folder": meta["folder"]},
        "combination": {"type": "link", "tag": meta["common_tag"], "favorited": "false"},
        "total": {"include": "total"},
        "tag_list": {},
    }


def _path(name: str, params: dict[str, str]) -> str:
    if name == "tag_list":
        return "/v1/tags?limit=100"
    return "/v1/cards?" + urlencode({"limit": "50", **params})


def _walk_to_page(port: int, key: str, page: int) -> str:
    """Follow nextCursor from the first page; return the cursor of the given page (1-based)."""
    cursor = ""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
        for _ in range(page - 1):
            params = {"limit": "50", **({"cursor": cursor} if cursor else {})}
            body = client.get("/v1/cards", params=params, timeout=60).raise_for_status().json()
            cursor = body["pageInfo"]["nextCursor"]
    return cursor


def _target(name: str, kind: str) -> float:
    return TARGETS.get(name, LIST_TARGET) * (2 if kind == "sqlite" else 1)


def _explain(url: str, meta: dict[str, Any], name: str, params: dict[str, str]) -> None:
    """Run the workload's domain call in process and print the plan of each statement it sends."""
    db = open_database(url)
    statements: list[tuple[str, Any]] = []

    @event.listens_for(db.engine, "before_cursor_execute")
    def _capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    account = meta["account_id"]
    with db.transaction(write=False) as session:
        if name == "tag_list":
            operations.list_tags(session, account_id=account, secret="x" * 32, limit=100)
        else:
            filters = listing.CardFilter(
                sort=params.get("sort"),
                card_types=tuple(filter(None, [params.get("type")])),
                tags=tuple(filter(None, [params.get("tag")])),
                q=params.get("q"),
                favorited={"true": True, "false": False}.get(params.get("favorited", "")),
                folders=tuple(filter(None, [params.get("folder")])),
            )
            listing.list_cards(
                session,
                account_id=account,
                secret="x" * 32,
                filters=filters,
                limit=50,
                with_total=params.get("include") == "total",
            )
    event.remove(db.engine, "before_cursor_execute", _capture)
    prefix = "EXPLAIN QUERY PLAN " if db.dialect == "sqlite" else "EXPLAIN (ANALYZE, BUFFERS) "
    raw = db.engine.raw_connection()
    try:
        for statement, parameters in statements:
            if not statement.lstrip().upper().startswith("SELECT"):
                continue
            cursor = raw.cursor()
            cursor.execute(prefix + statement, parameters)
            print(f"-- {name}: {statement.strip()[:2000]}\n-- parameters: {parameters}")
            for row in cursor.fetchall():
                print("   ", " ".join(str(v) for v in row))
            cursor.close()
        raw.rollback()
    finally:
        raw.close()
    db.dispose()


def _measure(port: int, path: str, key: str, clients: int, seconds: float) -> LoadResult:
    headers = {"Authorization": f"Bearer {key}"}
    run_load("127.0.0.1", port, path, headers, connections=clients, seconds=min(1.0, seconds))
    return run_load("127.0.0.1", port, path, headers, connections=clients, seconds=seconds)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--cards", type=int, help="cards of the measured account (1M; SQLite 100k)")
    parser.add_argument("--accounts", type=int, help="other accounts (99; SQLite 9)")
    parser.add_argument("--account-cards", type=int, default=10_000, help="cards of each other account")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", nargs="*", help="run only these workloads")
    parser.add_argument("--reuse", action="store_true", help="keep the data of an earlier run")
    args = parser.parse_args()
    kind = args.database
    big = args.cards or (1_000_000 if kind == "postgresql" else 100_000)
    others = args.accounts if args.accounts is not None else (99 if kind == "postgresql" else 9)
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})

    url = _fresh_database(kind, args.reuse)
    meta_file = WORKDIR / f"{kind}.json"
    if args.reuse and meta_file.exists():
        meta = json.loads(meta_file.read_text())
        started = time.perf_counter()
        open_database(url).migrate()
        print(f"migrations applied on the loaded data in {time.perf_counter() - started:.1f} s")
    else:
        meta = _load(url, kind, [big] + [args.account_cards] * others)
        meta_file.write_text(json.dumps(meta))
    print(json.dumps({k: v for k, v in meta.items() if k != "folders" and not k.startswith("longest")}))

    workloads = _workloads(meta)
    db = open_database(url)
    with db.transaction() as session:
        key = keys.issue_api_key(session, account_id=meta["account_id"])
        made = int(time.time())
        for name, of in SMART.items():
            query = workloads[of]["q"]
            smart = folders.create_folder(
                session, account_id=meta["account_id"], name=f"{name} {made}", query=query
            )
            workloads[name] = {"folder": smart.id}
    db.dispose()
    env = {
        **os.environ,
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_DATA_DIR": str(WORKDIR),
        "CARDVAULT_VALIDATE_RESPONSES": "false",
        # Production's shape: the API process sends work to a broker and runs none itself (on
        # the embedded default it would run, during the measurement, the stages the
        # migrations queued for every card).
        "CARDVAULT_REDIS_URL": REDIS_SCRATCH,
    }
    if args.only:
        workloads = {k: v for k, v in workloads.items() if k in args.only}
    port = free_port()
    process = start_uvicorn(["--factory", "cardvault.handlers.http.app:app_from_env"], env, port)
    results: dict[str, tuple[LoadResult, LoadResult]] = {}
    try:
        if "page_200" in workloads:
            workloads["page_200"] = {"cursor": _walk_to_page(port, key, 200)}
        for name, params in workloads.items():
            path = _path(name, params)
            results[name] = (
                _measure(port, path, key, 1, args.seconds),
                _measure(port, path, key, 16, args.seconds),
            )
            one, many = results[name]
            assert one.errors == 0 and many.errors == 0, (name, one, many)
    finally:
        process.terminate()
        process.wait()
        redis.Redis.from_url(REDIS_SCRATCH).flushdb()

    print(f"\n{kind}, {meta['cards']:,} cards in the measured account, {args.seconds:.0f} s per run")
    print(
        f"{'workload':<17}{'1 client p50/p99 ms':>21}{'16 clients p50/p99 ms':>23}{'rps 1':>8}{'rps 16':>8}"
        f"{'x':>6}{'target':>8}"
    )
    over = []
    for name, (one, many) in results.items():
        target = _target(name, kind)
        flag = "" if one.p99_ms <= target else "  OVER"
        if flag:
            over.append(name)
        print(
            f"{name:<17}{one.p50_ms:>12.1f}/{one.p99_ms:<8.1f}{many.p50_ms:>14.1f}/{many.p99_ms:<8.1f}"
            f"{one.rps:>8.0f}{many.rps:>8.0f}{many.rps / one.rps:>6.1f}{target:>8.0f}{flag}"
        )
    for name, (one, many) in results.items():
        line = {
            "workload": name,
            "database": kind,
            "cards": meta["cards"],
            "p50_ms": round(one.p50_ms, 2),
            "p99_ms": round(one.p99_ms, 2),
            "p50_ms_16": round(many.p50_ms, 2),
            "p99_ms_16": round(many.p99_ms, 2),
            "rps_1": round(one.rps, 1),
            "rps_16": round(many.rps, 1),
            "throughput_ratio_16_to_1": round(many.rps / one.rps, 2),
            "target_p99_ms": _target(name, kind),
        }
        print(json.dumps(line))
    _ratios(results)
    for name in over:
        if name != "page_200":
            _explain(url, meta, name, workloads[name])
    if kind == "postgresql" and "q_common" in workloads:
        _scored_ranking(url, meta)


def _ratios(results: dict[str, tuple[LoadResult, LoadResult]]) -> None:
    """The new q workloads beside the one-word search (1 client): what a question, a typo and the
    longest q cost against q_common; each smart folder against the q of its query."""
    for name, of in SMART.items():
        if name in results and of in results:
            one, base = results[name][0], results[of][0]
            ratio = {"p50": round(one.p50_ms / base.p50_ms, 2), "p99": round(one.p99_ms / base.p99_ms, 2)}
            print(json.dumps({"ratio": f"{name}/{of}", **ratio}))
    if "q_common" not in results:
        return
    base = results["q_common"][0]
    for name in ("q_question", "q_typo", "q_longest_typos", "q_longest_common", "q_longest_rare"):
        if name in results:
            one = results[name][0]
            ratio = {"p50": round(one.p50_ms / base.p50_ms, 2), "p99": round(one.p99_ms / base.p99_ms, 2)}
            print(json.dumps({"ratio": f"{name}/q_common", **ratio}))


def _scored_ranking(url: str, meta: dict[str, Any]) -> None:
    """What relevance by score would cost: the common word's matches in the measured account
    ranked by ts_rank in raw SQL (every match scored, then the best 50), against the tiers."""
    engine = create_engine(url)
    statement = text(
        "SELECT s.card_pk FROM card_search s JOIN cards c ON c.pk = s.card_pk "
        "WHERE s.words @@ CAST(:q AS tsquery) AND c.account_id = :account AND c.deleted_at IS NULL "
        "ORDER BY ts_rank(s.words, CAST(:q AS tsquery)) DESC, c.created_at DESC LIMIT 50"
    )
    values = {"q": f"'{meta['common_word'][0]}':*", "account": meta["account_id"]}
    times = []
    with engine.connect() as connection:
        connection.execute(text("SET max_parallel_workers_per_gather = 0"))
        for _ in range(21):
            started = time.perf_counter()
            connection.execute(statement, values).all()
            times.append((time.perf_counter() - started) * 1000)
    engine.dispose()
    times = sorted(times[1:])
    print(
        json.dumps(
            {
                "baseline": "ts_rank over every match of the common word, raw SQL",
                "matches": meta["common_word"][1],
                "p50_ms": round(times[len(times) // 2], 1),
                "max_ms": round(times[-1], 1),
            }
        )
    )


if __name__ == "__main__":
    main()
