"""Hostile link pages: for each family of decoders a page's charset can choose (and for labels
that must choose none), a page of the largest size the link stage reads, made of that family's
worst bytes, is read by the link-page reader (cardvault.adapters.pages.read_page).

Every page must be read (or refused as unreadable) and the whole corpus must finish inside a
child process whose CPU time is capped far above what linear reading needs (a few seconds for
all of it): a decoder quadratic in its input, like Python's punycode (0.7 s at 220 KB, about
20 CPU-minutes at 5 MiB), is killed by the cap and fails the test instead of holding a worker.
How long each family takes, and how it grows with the size, is measured by bench/bench_pages.py."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

from cardvault.domain.pipeline.link_metadata import PAGE_BYTES
from harness.page_charsets import FAMILIES
from harness.servers import ROOT

CPU_SECONDS = 120  # for the whole corpus, which reads in about 5 s on one core

_CHILD = textwrap.dedent(
    """
    import sys
    from harness.page_charsets import FAMILIES, page
    from cardvault.adapters.pages import PageUnreadable, read_page
    for label in FAMILIES:
        try:
            body, content_type = page(label, int(sys.argv[1])), f"text/html; charset={label}"
            read_page(body, url="https://example.com/", content_type=content_type)
            print(label, "read", flush=True)
        except PageUnreadable:
            print(label, "unreadable", flush=True)
    """
)


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def test_each_decoder_family_reads_the_largest_page_in_linear_time() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(PAGE_BYTES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=_cap,  # a resource limit, set in the child before exec
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    unfinished = [label for label in FAMILIES if label not in lines]
    assert not unfinished, (
        f"killed at the CPU cap ({CPU_SECONDS} s) before reading {unfinished[0]}: "
        f"exit {done.returncode}\n{done.stderr[-2000:]}"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert set(lines.values()) <= {"read", "unreadable"}
