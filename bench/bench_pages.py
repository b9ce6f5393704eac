"""Link pages by charset: how long the link-page reader (cardvault.adapters.pages.read_page) takes
on a page made of each decoder family's worst bytes, at 1 MiB and at 4 MiB, and how that grows
(4.0 is linear), against a bare ``bytes.decode("utf-8", "replace")`` of the same bytes in the
same run. The pages are bench/page_charsets.py's, which the hostile corpus reads too. A last row
times Python's own punycode codec, which the reader no longer lets a page choose, at three small
sizes, to show the growth it had (quadratic: 4x the time per doubling).

    .venv/bin/python -m bench.bench_pages [--repeats N]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable

from cardvault.adapters.pages import PageUnreadable, read_page
from harness.page_charsets import FAMILIES, page

MIB = 1024 * 1024


def _seconds(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _read(body: bytes, label: str) -> None:
    with contextlib.suppress(PageUnreadable):
        read_page(body, url="https://example.com/", content_type=f"text/html; charset={label}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    _read(page("utf-8", MIB), "utf-8")  # the libraries' imports and first-use set-up, untimed
    print(f"{'charset':16} {'1 MiB ms':>9} {'4 MiB ms':>9} {'growth':>7} {'x utf-8 decode':>15}")
    for label in FAMILIES:
        small, large = page(label, MIB), page(label, 4 * MIB)
        t_small = _seconds(lambda b=small, lb=label: _read(b, lb), args.repeats)
        t_large = _seconds(lambda b=large, lb=label: _read(b, lb), args.repeats)
        base = _seconds(lambda b=large: b.decode("utf-8", "replace"), args.repeats)
        row = {
            "charset": label,
            "ms_1mib": round(t_small * 1000, 1),
            "ms_4mib": round(t_large * 1000, 1),
            "growth": round(t_large / t_small, 2),
            "x_baseline": round(t_large / base, 1),
        }
        rows.append(row)
        print(
            f"{label:16} {row['ms_1mib']:>9} {row['ms_4mib']:>9} {row['growth']:>7} {row['x_baseline']:>15}"
        )
    codec = {}
    for size in (64_000, 128_000, 256_000):
        codec[size] = _seconds(lambda n=size: (b"a" * n).decode("punycode", "replace"), 1)
    growth = round(codec[256_000] / codec[128_000], 2)
    print(
        "python's punycode codec, refused as a label: "
        + ", ".join(f"{n // 1000} KB {t * 1000:.0f} ms" for n, t in codec.items())
        + f" (growth per doubling {growth})"
    )
    print(json.dumps({"pages": rows, "punycode_codec_growth_per_doubling": growth}))


if __name__ == "__main__":
    main()
