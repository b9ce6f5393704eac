"""Link pages: how many links one worker reads per second (both link stages: the page fetched
through the SSRF-safe fetcher and read, the card written, then the page's image fetched, made
into 1200, 256 and 48 px WebP by the decoder's child and stored), against a bare loop doing the
same fetches and parsing with the same libraries (httpx, extruct, trafilatura, selectolax,
Pillow) in this process; aim: at least 0.7x. With the worker's peak RSS.

The pages (a 40 kB article each, with JSON-LD, Open Graph and a 1000x700 JPEG) are served by
a separate process (``python -m http.server``); the worker is ``cardvault worker`` with one
process and one thread, on Redis and PostgreSQL (SQLite with --sqlite). Rounds alternate.

    .venv/bin/python -m bench.bench_links [--links N] [--rounds R] [--sqlite]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

BENCH_REDIS = os.environ.get("CARDVAULT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
os.environ["CARDVAULT_REDIS_URL"] = BENCH_REDIS  # the broker this process sends on (before import)

import httpx  # noqa: E402
import redis  # noqa: E402
from PIL import Image  # noqa: E402

from cardvault.bootstrap import bootstrap  # noqa: E402
from cardvault.domain.auth import accounts  # noqa: E402
from cardvault.domain.cards import editing  # noqa: E402
from cardvault.domain.database import open_database  # noqa: E402
from cardvault.domain.db import Database  # noqa: E402
from cardvault.domain.models import CardStage  # noqa: E402
from cardvault.domain.pipeline import processing  # noqa: E402
from cardvault.settings import Settings  # noqa: E402
from harness.servers import (  # noqa: E402
    BIN,
    ROOT,
    free_port,
    fresh_database,
    peak_rss_mb,
    process_tree,
    serve_directory,
)


def _site(root: Path, links: int) -> None:
    """``links`` article pages and one image each (hard links of one JPEG)."""
    paragraphs = "".join(
        f"<p>Paragraph {n} of the article: tides rise and fall twice a day, and the tables say "
        f"when, to the minute, for every harbour along the coast, season after season.</p>"
        for n in range(160)
    )
    image = io.BytesIO()
    Image.effect_noise((1000, 700), 40).convert("RGB").save(image, "JPEG", quality=85)
    (root / "image.jpg").write_bytes(image.getvalue())
    for n in range(links):
        os.link(root / "image.jpg", root / f"image-{n}.jpg")
        (root / f"page-{n}.html").write_text(
            f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Reading tide tables, part {n} | Harbour Notes</title>
<meta name="description" content="How to read a tide table, part {n}.">
<meta property="og:title" content="Reading tide tables, part {n}">
<meta property="og:type" content="article">
<meta property="og:image" content="/image-{n}.jpg">
<meta property="og:site_name" content="Harbour Notes">
<link rel="canonical" href="/page-{n}.html"><link rel="icon" href="/favicon.png" sizes="32x32">
<script type="application/ld+json">{{"@context": "https://schema.org", "@graph": [
{{"@type": "Organization", "name": "Harbour Notes"}},
{{"@type": "BlogPosting", "headline": "Reading tide tables, part {n}",
"author": {{"@type": "Person", "name": "Ann Lee"}}, "datePublished": "2026-03-14T09:30:00Z"}}]}}</script>
</head><body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Reading tide tables, part {n}</h1>{paragraphs}</article>
<footer>Harbour Notes, all rights reserved.</footer></body></html>"""
        )


def _bare(client: httpx.Client, base: str, n: int) -> None:
    """What the libraries alone do for one link: fetch and read the page, fetch the image and
    make the same three WebP sizes."""
    import extruct
    import trafilatura
    from extruct.opengraph import OpenGraphExtractor
    from extruct.utils import parse_html
    from selectolax.lexbor import LexborHTMLParser

    html = client.get(f"{base}/page-{n}.html").text
    LexborHTMLParser(html).css("link[href], meta[content]")
    tree = parse_html(html, encoding="utf-8")
    extruct.extract(tree, base_url=base, syntaxes=["json-ld", "microdata"], uniform=True)
    list(OpenGraphExtractor().extract_items(tree))
    trafilatura.bare_extraction(tree, url=base, with_metadata=True, favor_precision=True)
    body = client.get(f"{base}/image-{n}.jpg").content
    with Image.open(io.BytesIO(body)) as image:
        image.load()
        for side, quality in ((1200, 85), (256, 80), (48, 50)):
            image.thumbnail((side, side))
            image.save(io.BytesIO(), "WEBP", quality=quality, method=4)


def _cards(db: Database, account_id: str, base: str, first: int, count: int) -> list[int]:
    with db.transaction() as session:
        pks = []
        for n in range(first, first + count):
            card = editing.add_card(session, account_id=account_id, content=f"{base}/page-{n}.html").card
            processing.queue(session, card)
            pks.append(card.pk)
    return pks


def _settled(db: Database, pks: list[int]) -> int:
    from sqlalchemy import func, select

    with db.transaction(write=False) as session:
        query = select(func.count()).where(
            CardStage.card_pk.in_(pks), CardStage.state.in_(("completed", "failed", "skipped"))
        )
        return int(session.scalar(query) or 0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--links", type=int, default=100, help="links per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sqlite", action="store_true")
    args = parser.parse_args()
    redis.Redis.from_url(BENCH_REDIS).flushdb()
    from cardvault.workers.pipeline import send_stage

    with tempfile.TemporaryDirectory() as workdir:
        root = Path(workdir) / "site"
        root.mkdir()
        _site(root, args.links * args.rounds)
        site_port = free_port()
        site = serve_directory(root, site_port)
        base = f"http://localhost:{site_port}"
        url = fresh_database("sqlite" if args.sqlite else "postgresql", Path(workdir))
        env = {
            **os.environ,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_DATA_DIR": workdir,
            "CARDVAULT_REDIS_URL": BENCH_REDIS,
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(site_port),
            "CARDVAULT_CAPTURE": "false",  # the link stages alone (bench_capture measures capture)
        }
        db = open_database(url)
        db.migrate()
        with db.transaction() as session:
            account_id = accounts.create_account(session, name="bench-links").id

        bootstrap(Settings.from_env(env), database=db)
        pin = ["taskset", "-c", "0"] if (os.cpu_count() or 1) > 1 else []
        worker = subprocess.Popen(
            [*pin, str(BIN / "cardvault"), "worker", "--processes", "1", "--threads", "1"], env=env, cwd=ROOT
        )
        ours, bare, worker_rss = [], [], 0.0
        try:
            time.sleep(3)  # the worker boots
            with httpx.Client(timeout=30) as client:
                _bare(client, base, 0)  # warm the libraries
                for round_ in range(args.rounds):
                    first = round_ * args.links
                    pks = _cards(db, account_id, base, first, args.links)
                    started = time.perf_counter()
                    for pk in pks:
                        send_stage(pk, "linkMetadata")
                    while _settled(db, pks) < 2 * len(pks):
                        time.sleep(0.02)
                    ours.append(args.links / (time.perf_counter() - started))
                    started = time.perf_counter()
                    for n in range(first, first + args.links):
                        _bare(client, base, n)
                    bare.append(args.links / (time.perf_counter() - started))
            failed = _failed(db, account_id)
            worker_rss = sum(peak_rss_mb(pid) for pid in process_tree(worker.pid)[1:])
        finally:
            worker.terminate()
            worker.wait()
            site.terminate()
            site.wait()
            db.dispose()
    ratios = [o / b for o, b in zip(ours, bare, strict=True)]
    result = {
        "workload": "link_pages",
        "metric": "links per second",
        "value": round(statistics.median(ours), 1),
        "baseline_value": round(statistics.median(bare), 1),
        "throughput_ratio": round(statistics.median(ratios), 2),
        "failed_stages": failed,
        "worker_peak_rss_mb": round(worker_rss, 1),
        "database": "sqlite" if args.sqlite else "postgresql",
    }
    print(f"\n{'workload':<14}{'ours/s':>10}{'bare/s':>10}{'ratio':>8}  extra")
    extra = {k: v for k, v in result.items() if k not in ("workload", "metric", "value", "baseline_value")}
    ratio = result["throughput_ratio"]
    print(f"{result['workload']:<14}{result['value']:>10}{result['baseline_value']:>10}{ratio:>8}  {extra}")
    print(json.dumps(result))


def _failed(db: Database, account_id: str) -> int:
    from sqlalchemy import func, select

    from cardvault.domain.models import Card

    with db.transaction(write=False) as session:
        query = (
            select(func.count())
            .select_from(CardStage)
            .join(Card, Card.pk == CardStage.card_pk)
            .where(Card.account_id == account_id, CardStage.state == "failed")
        )
        return int(session.scalar(query) or 0)


if __name__ == "__main__":
    main()
