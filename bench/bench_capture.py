"""Link capture: pages captured per minute by the capture browser
(cardvault.adapters.capture.CaptureBrowser: Debian's Chromium behind the capture proxy, a fresh
context per page, its screenshot, MHTML archive and rendered HTML), against a bare Playwright
screenshot of the same local pages with no proxy, in alternating rounds; aim: at most 1.3x the
bare time per page. Then the capture browser's memory over 200 captures in a row; aim: flat.

Both sides drive the same Chromium program (/usr/lib/chromium/chromium), headless, without its
sandbox, launched once and kept for every round, and wait for a page the same way:

- ours: ``CaptureBrowser.capture(url, wait=5)`` with the default Limits: a context with the
  capture's settings (1280 x 800, downloads and service workers refused, popups closed); every
  request through the loopback proxy, vetted by the SSRF-safe fetcher; navigation to the
  response, then the ``load`` event and a quiet network (at most 2 s); the page scrolled a
  screen at a time with 50 ms pauses and back to the top; the browser's memory polled every
  0.25 s meanwhile; then a CDP session: the first screen as WebP (quality 80), the page as
  MHTML (Page.captureSnapshot), the rendered HTML and the title; the context closed;
- bare: Playwright's sync API on a browser launched without its sandbox and with none of the
  capture's switches (Playwright's own only; no proxy): a context of 1280 x 800, ``goto`` until
  ``load``, a quiet network (at most 2 s), the same scroll down and back, ``page.screenshot()``
  of the viewport (PNG, Playwright's default), the context closed.

So the ratio is what the capture adds to a screenshot: the proxy, the archive and the HTML, the
context's settings and the memory watch. The worker's reader view
(cardvault.adapters.pages.main_text.reader) is timed apart, on the captured HTML, in the memory
phase; the screenshot's renditions (the decoder's child) are not part of this bench.

The memory phase captures ``--memory-captures`` pages in a row with a fresh CaptureBrowser and
samples, after the first capture and every 20th: ``browser.memory()`` (the memory the browser's
processes hold of their own, their USS added up: the measure its limit uses), Playwright's
driver (node) and this process; "flat" means the
three together grew at most AIM_GROWTH_MB from the 20th capture to the last, and the browser was
never started again. Captures refused (CaptureRefused) are counted by code on both phases: in
the rounds a refusal costs its time and gives no page, and misses the aim.

The pages (six articles of about 40 kB of HTML, half of it text, 8,200 px tall, each with
JSON-LD, a stylesheet, three JPEGs, one of them lazy, and a script that fetches JSON after
``load`` and draws comments and a related box with it, as sites do) are served by a separate
process (``python -m http.server``), as in bench_links. Every capture takes at least the half
second of quiet network and the scroll (about 0.6 s here), on both sides, so the default run
takes about six minutes on two cores (more beside a CI run), five of them the memory phase's
200 captures: a browser changes as it ages (Chromium starts services of its own minutes after
its launch), which a shorter phase would not see.

    .venv/bin/python -m bench.bench_capture [--pages N] [--rounds R] [--memory-captures M]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from PIL import Image

from cardvault.adapters.capture import CaptureBrowser, CaptureRefused, Limits, find_browser
from cardvault.adapters.capture.steps import SCROLL_PAUSE, SCROLL_SECONDS, SETTLE_SECONDS, VIEWPORT
from cardvault.adapters.fetcher import Fetcher
from cardvault.adapters.pages.main_text import reader
from harness.servers import free_port, peak_rss_mb, serve_directory

SITE_PAGES = 6
SAMPLE_EVERY = 20
AIM_RATIO = 1.3
# What "flat" allows the browser, Playwright's driver and this process together to grow from the
# sample at capture SAMPLE_EVERY (the first captures fill caches) to the last.
AIM_GROWTH_MB = 50
MB = 1024 * 1024

_STYLE = """body{font:17px/1.6 Georgia,serif;margin:0;color:#222}
header,footer{background:#14324a;color:#fff;padding:12px 24px}.nav,.footer-links{display:flex;
flex-wrap:wrap;gap:4px 12px;list-style:none;padding:0;font-size:13px}a{color:inherit}
main{display:flex;gap:32px;max-width:1180px;margin:0 auto;padding:24px}
article{flex:3}aside{flex:1;font-size:15px}img{max-width:100%;height:auto;display:block}
figure{margin:24px 0}figcaption{color:#666;font-size:14px}.comment{border-top:1px solid #ddd}"""

# After the load, as many sites do: data fetched, then part of the page drawn with it.
_SCRIPT = """window.addEventListener('load', async () => {
  const n = document.body.dataset.page;
  const data = await (await fetch(`/data-${n}.json`)).json();
  const aside = document.querySelector('aside');
  aside.insertAdjacentHTML('beforeend', `<h3>Related</h3><img src="/img/${n}-related.jpg"
    width="300" height="200" alt="">` + data.related.map((t) => `<p>${t}</p>`).join(''));
  const list = document.getElementById('comments');
  for (const c of data.comments) {
    list.insertAdjacentHTML('beforeend', `<div class="comment"><b>${c.who}</b><p>${c.text}</p></div>`);
  }
});"""


def _jpeg(size: tuple[int, int], seed: int) -> bytes:
    picture = Image.effect_noise(size, 30 + seed).convert("RGB")
    picture.paste(Image.linear_gradient("L").resize(size).convert("RGB"), mask=Image.new("L", size, 160))
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=82)
    return out.getvalue()


def _site(root: Path) -> None:
    """SITE_PAGES article pages with their stylesheet, script, pictures and data."""
    (root / "img").mkdir()
    (root / "site.css").write_text(_STYLE)
    (root / "app.js").write_text(_SCRIPT)
    pictures = {
        "hero": _jpeg((1200, 600), 0),
        "figure": _jpeg((800, 500), 5),
        "related": _jpeg((300, 200), 9),
    }
    for n in range(SITE_PAGES):
        for name, body in pictures.items():
            (root / "img" / f"{n}-{name}.jpg").write_bytes(body)
        related = [f"Tide tables, part {n + k}: what the harbour master reads" for k in range(1, 6)]
        comments = [
            {"who": f"Reader {k}", "text": f"Comment {k} on part {n}: the spring tides came early."}
            for k in range(12)
        ]
        (root / f"data-{n}.json").write_text(json.dumps({"related": related, "comments": comments}))
        (root / f"page-{n}.html").write_text(_article(n))


def _ld(n: int) -> str:
    article = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": f"Reading tide tables, part {n}",
        "image": [f"/img/{n}-hero.jpg"],
        "datePublished": "2026-03-14T09:30:00Z",
        "author": [{"@type": "Person", "name": f"Author {k}", "url": f"/authors/{k}"} for k in range(12)],
        "publisher": {"@type": "Organization", "name": "Harbour Notes", "logo": "/logo.png"},
    }
    return json.dumps(article)


def _article(n: int) -> str:
    """A page of about 40 kB, as a site's: half of it text, the rest markup around it."""
    links = "".join(
        f'<li class="nav-item"><a class="nav-link" href="/section/{k}">Section {k}</a></li>'
        for k in range(100)
    )
    paragraphs = [
        f'<p class="article-body__paragraph">Paragraph {k} of part {n}: tides rise and fall twice a '
        f"day, and the <em>tables</em> say when, to the minute, for every harbour along the coast, "
        f'<a class="inline-link" href="/glossary/{k}">season after season</a>, so that pilots, '
        f"fishers and ferry crews can plan the day's crossings.</p>"
        for k in range(70)
    ]
    paragraphs.insert(10, f'<figure><img src="/img/{n}-figure.jpg" width="800" height="500" alt="">')
    paragraphs.insert(11, "<figcaption>The harbour at low water.</figcaption></figure>")
    paragraphs.insert(
        50, f'<img src="/img/{n}-figure.jpg?lazy" loading="lazy" width="800" height="500" alt="">'
    )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Reading tide tables, part {n} | Harbour Notes</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta property="og:title" content="Reading tide tables, part {n}"><meta property="og:type" content="article">
<script type="application/ld+json">{_ld(n)}</script>
<link rel="stylesheet" href="/site.css"><script src="/app.js" defer></script></head>
<body data-page="{n}"><header><b>Harbour Notes</b><nav><ul class="nav">{links}</ul></nav></header>
<main><article><h1>Reading tide tables, part {n}</h1>
<img src="/img/{n}-hero.jpg" width="1200" height="600" alt="The harbour">{"".join(paragraphs)}
<section id="comments"><h2>Comments</h2></section></article><aside><h3>About</h3>
<p>Notes from a harbour town.</p></aside></main><footer><ul class="footer-links">{links}</ul>
</footer></body></html>"""


@dataclasses.dataclass
class Round:
    times: list[float]  # of the pages shot
    seconds: float  # the whole round, refused captures included
    refused: list[str]


class Bare:
    """The bare side: Playwright's sync API, the same Chromium, no proxy, no switches."""

    def __init__(self, executable: str) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=executable, headless=True, chromium_sandbox=False
        )

    def shoot(self, url: str) -> bytes:
        """Open ``url`` in a fresh context, wait as the capture does, and shoot the viewport."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        context = self._browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            page.goto(url, wait_until="load", timeout=30_000)
            with contextlib.suppress(PlaywrightTimeout):
                page.wait_for_load_state("networkidle", timeout=SETTLE_SECONDS * 1000)
            self._scroll(page)
            return page.screenshot()
        finally:
            context.close()

    @staticmethod
    def _scroll(page: Any) -> None:
        # The capture's own scroll (cardvault.adapters.capture.steps._scroll), step for step.
        stop, y = time.monotonic() + SCROLL_SECONDS, 0
        while time.monotonic() < stop:
            height = page.evaluate("document.scrollingElement ? document.scrollingElement.scrollHeight : 0")
            if y + VIEWPORT["height"] >= height:
                break
            y += VIEWPORT["height"]
            page.evaluate(f"window.scrollTo(0, {y})")
            time.sleep(SCROLL_PAUSE)
        page.evaluate("window.scrollTo(0, 0)")
        time.sleep(SCROLL_PAUSE)

    def close(self) -> None:
        self._browser.close()
        self._playwright.stop()


def _round(shoot: Callable[[str], object], base: str, first: int, pages: int) -> Round:
    """``pages`` pages, from page ``first`` of the site, cycled: the seconds of each page shot,
    the seconds the round took and the codes of the captures refused."""
    times, refused = [], []
    began = time.perf_counter()
    for n in range(first, first + pages):
        started = time.perf_counter()
        try:
            shoot(f"{base}/page-{n % SITE_PAGES}.html")
        except CaptureRefused as exc:  # (counted, and left out of the times per page)
            refused.append(exc.code)
            continue
        times.append(time.perf_counter() - started)
    return Round(times, time.perf_counter() - began, refused)


def _capture_browser(executable: str, port: int) -> CaptureBrowser:
    fetcher = Fetcher(ports=(port,), allow_loopback=True)
    return CaptureBrowser(executable=executable, fetcher=fetcher, limits=Limits(), sandbox=False)


def _driver_mb() -> float:
    """The resident MB of Playwright's driver (its node process, a child of this one)."""
    total = 0
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if Path(child.exe()).name == "node":
                total += child.memory_info().rss
    return total / MB


def _memory_phase(executable: str, port: int, base: str, captures: int) -> dict[str, Any]:
    """Capture ``captures`` pages in a row with a fresh capture browser, reading each page's
    reader view as the worker does; the memory every SAMPLE_EVERY captures."""
    browser = _capture_browser(executable, port)
    samples: list[dict[str, float]] = []
    reading, seconds, refused = [], [], collections.Counter[str]()
    first_refusal: dict[str, Any] | None = None
    began = time.perf_counter()
    try:
        for n in range(1, captures + 1):
            started = time.perf_counter()
            try:
                shot = browser.capture(f"{base}/page-{n % SITE_PAGES}.html", wait=5)
                seconds.append(time.perf_counter() - started)
                started = time.perf_counter()
                reader(shot.html, shot.final_url)
                reading.append(time.perf_counter() - started)
            except CaptureRefused as exc:
                refused[exc.code] += 1
                if first_refusal is None:
                    first_refusal = {"capture": n, "after_s": round(started - began), "message": str(exc)}
            if n == 1 or n % SAMPLE_EVERY == 0:
                time.sleep(0.5)  # the closed context's renderer ends, not counted in the sample
                samples.append(_sample(n, browser))
        launches = browser.launches
    finally:
        browser.close()
    return {
        "samples": samples,
        "launches": launches,
        "refused": dict(refused),
        "first_refusal": first_refusal,
        "capture_s": statistics.median(seconds) if seconds else float("nan"),
        "reader_ms": statistics.median(reading) * 1000 if reading else float("nan"),
    }


def _sample(capture: int, browser: CaptureBrowser) -> dict[str, float]:
    return {
        "capture": capture,
        "browser_mb": round(browser.memory() / MB, 1),
        "driver_mb": round(_driver_mb(), 1),
        "self_mb": round(psutil.Process().memory_info().rss / MB, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=10, help="pages per round and side")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side, alternating")
    parser.add_argument("--memory-captures", type=int, default=200)
    args = parser.parse_args()
    executable = find_browser()
    if executable is None:
        raise SystemExit("no Chromium found (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as workdir:
        root = Path(workdir)
        _site(root)
        port = free_port()
        site = serve_directory(root, port, probe="/site.css")
        try:
            result = _measure(args, executable, port, f"http://127.0.0.1:{port}")
        finally:
            site.terminate()
            site.wait()
    _report(result)


def _measure(args: argparse.Namespace, executable: str, port: int, base: str) -> dict[str, Any]:
    """The alternating rounds, then the memory phase, with both browsers of the rounds closed."""
    bare = Bare(executable)
    ours = _capture_browser(executable, port)
    bare_rounds: list[Round] = []
    our_rounds: list[Round] = []
    try:
        for warm in range(2):  # each side's first pages (the browser's start, the libraries) untimed
            bare.shoot(f"{base}/page-{warm}.html")
            ours.capture(f"{base}/page-{warm}.html", wait=5)
        for round_ in range(args.rounds):
            first = round_ * args.pages
            bare_rounds.append(_round(bare.shoot, base, first, args.pages))
            our_rounds.append(_round(lambda url: ours.capture(url, wait=5), base, first, args.pages))
    finally:
        bare.close()
        ours.close()
    speed = _speed(bare_rounds, our_rounds)
    memory = _memory_result(_memory_phase(executable, port, base, args.memory_captures))
    return {
        "workload": "link_capture",
        "metric": "pages captured per minute",
        **speed,
        "memory_captures": args.memory_captures,
        **memory,
        "process_peak_rss_mb": round(peak_rss_mb(os.getpid()), 1),
        "pages": args.pages,
        "rounds": args.rounds,
    }


def _speed(bare_rounds: list[Round], our_rounds: list[Round]) -> dict[str, Any]:
    """Pages per minute and seconds per page shot; a refused capture costs its time, no page."""

    def per_page(round_: Round) -> float:
        return round_.seconds / max(1, len(round_.times))

    ratios = [per_page(o) / per_page(b) for o, b in zip(our_rounds, bare_rounds, strict=True)]
    ours_s = statistics.median(t for r in our_rounds for t in r.times)
    bare_s = statistics.median(t for r in bare_rounds for t in r.times)
    refused = collections.Counter(code for r in our_rounds for code in r.refused)
    ratio = statistics.median(ratios)
    return {
        "value": round(statistics.median(60 / per_page(r) for r in our_rounds), 1),
        "baseline_value": round(statistics.median(60 / per_page(r) for r in bare_rounds), 1),
        "time_ratio": round(ratio, 2),
        "round_ratios": [round(r, 2) for r in ratios],
        "ours_median_s": round(ours_s, 3),
        "bare_median_s": round(bare_s, 3),
        "overhead_s": round(ours_s - bare_s, 3),
        "rounds_refused": dict(refused),
        "aim_ratio": AIM_RATIO,
        "meets_ratio": ratio <= AIM_RATIO and not refused,
    }


def _memory_result(memory: dict[str, Any]) -> dict[str, Any]:
    """The samples, and their growth from capture SAMPLE_EVERY to the last."""
    samples = memory["samples"]
    steady = [s for s in samples if s["capture"] >= SAMPLE_EVERY] or samples
    growth = {
        part: round(steady[-1][f"{part}_mb"] - steady[0][f"{part}_mb"], 1)
        for part in ("browser", "driver", "self")
    }
    return {
        "browser_mb_first": steady[0]["browser_mb"],
        "browser_mb_last": steady[-1]["browser_mb"],
        "growth_mb": growth,
        "memory_flat": sum(growth.values()) <= AIM_GROWTH_MB and memory["launches"] == 1,
        "browser_launches": memory["launches"],
        "memory_refused": memory["refused"],
        "first_refusal": memory["first_refusal"],
        "memory_samples": samples,
        "memory_capture_median_s": round(memory["capture_s"], 3),
        "reader_median_ms": round(memory["reader_ms"], 1),
    }


def _report(result: dict[str, Any]) -> None:
    print(f"\n{'side':<8}{'pages/min':>11}{'median s/page':>15}")
    print(f"{'ours':<8}{result['value']:>11}{result['ours_median_s']:>15}")
    print(f"{'bare':<8}{result['baseline_value']:>11}{result['bare_median_s']:>15}")
    verdict = "meets" if result["meets_ratio"] else "misses"
    print(
        f"overhead {result['overhead_s']} s/page; time ratio ours/bare {result['time_ratio']} "
        f"(rounds {result['round_ratios']}), captures refused {result['rounds_refused'] or 'none'}: "
        f"{verdict} the aim of at most {AIM_RATIO}x"
    )
    print(f"\n{'capture':>8}{'browser MB':>12}{'driver MB':>11}{'this MB':>9}")
    for sample in result["memory_samples"]:
        print(
            f"{sample['capture']:>8}{sample['browser_mb']:>12}{sample['driver_mb']:>11}{sample['self_mb']:>9}"
        )
    flat = "flat" if result["memory_flat"] else "NOT flat"
    print(
        f"growth from capture {SAMPLE_EVERY} to the last {result['growth_mb']} MB, browser launches "
        f"{result['browser_launches']}: {flat}; reader view {result['reader_median_ms']} ms a page; "
        f"this process's peak RSS {result['process_peak_rss_mb']} MB"
    )
    refused, first = result["memory_refused"], result["first_refusal"]
    if refused:
        print(
            f"REFUSED {sum(refused.values())} of {result['memory_captures']} captures {refused}, the first "
            f"at capture {first['capture']}, {first['after_s']} s in: {first['message']}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
