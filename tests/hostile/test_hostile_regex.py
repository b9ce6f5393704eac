"""Every regular expression that reads an import, a link's page, a search query or what a card
holds, run on its worst input at 1, 2 and 4 MiB, each case in a child process whose CPU time is
capped far above what linear work needs (about a second for all three sizes) and far below what
quadratic work would take (hours at 1 MiB: Readwise's tag lists took 10 s at 32 KB before they
were read by a scanner). One C call of the regex engine holds the GIL, so a worker's time limit
cannot stop it: the cap is the only bound, and a case killed by it fails here instead.

Each case calls the code that uses the expression where it can (so the test follows the code),
else the compiled expression the way the code calls it; its input is what makes that expression
backtrack most: an open quote or run never closed, a prefix repeated without its suffix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from cardvault.adapters.pages import categories, encodings, head, schema_org, values
from cardvault.domain import errors
from cardvault.domain.cards import classify
from cardvault.domain.portability import archive
from cardvault.domain.portability.imports import entries as import_entries
from cardvault.domain.portability.imports.formats import delimited, known, zipped
from cardvault.domain.portability.restore import checks as restore_checks
from cardvault.domain.search import query, words
from harness.servers import ROOT

CASE_SECONDS = 30  # for one case's three sizes (linear ones take a few seconds on a loaded core)
SIZES = (1, 2, 4)  # MiB
# One worker runs every case, so the child that runs them all starts once.
pytestmark = pytest.mark.xdist_group("regex_linearity")


def _readwise(size: int) -> object:
    """A Readwise CSV of records whose tags field is the hostile review's (just under the
    record limit each): its size in MiB of such records."""
    header = "Title,URL,ID,Document tags,Saved date,Reading progress,Location,Seen\n"
    field = "'" + "\\'" * ((delimited.RECORD_LIMIT - 200) // 2)
    record = f"A,https://example.com/a,1,{field},2024-01-01T00:00:00Z,0,new,False\n"
    data = (header + record * max(1, size // len(record))).encode()
    return list(delimited.readwise([data[i : i + 65536] for i in range(0, len(data), 65536)]))


def _omnivore_notes(text: str) -> object:
    """Omnivore's highlights file split into paragraphs (the expression zipped._omnivore_notes
    splits with: its file is bounded to 1 MiB there) and each matched as a line of labels."""
    return [zipped._LABELS.fullmatch(block.strip()) for block in re.split(r"\n\s*\n", text)]


def _refused_or(parse: Callable[[str], Any], text: str) -> Any:
    """What the parser makes of the text, or the error it refuses it with (a bad query)."""
    try:
        return parse(text)
    except errors.CardVaultError as refused:
        return refused


def _repeat(unit: str, size: int, tail: str = "") -> str:
    return unit * (size // len(unit)) + tail


def _repeat_bytes(unit: bytes, size: int, tail: bytes = b"") -> bytes:
    return unit * (size // len(unit)) + tail


# Each case: its name, and what it does with an input of ``size`` characters (or bytes).
CASES: dict[str, Callable[[int], Any]] = {
    # Imports: the readers' own expressions and scanners.
    "readwise csv: an unclosed tag list": _readwise,
    "readwise tags: ' then escaped quotes": lambda n: delimited._python_strings("'" + _repeat("\\'", n)),
    'readwise tags: " then escaped quotes': lambda n: delimited._python_strings('"' + _repeat('\\"', n)),
    "readwise tags: many strings, an unclosed quote last": lambda n: delimited._python_strings(
        _repeat("'a', ", n, '"')
    ),
    "raindrop highlights: a break then spaces": lambda n: delimited.raindrop(
        [b'title,url,highlights\nA,https://example.com/a,"\n' + b" " * n + b'x"\n']
    ),
    "omnivore highlights: paragraphs of spaces": lambda n: _omnivore_notes(_repeat("\n \t ", n, "x")),
    "omnivore highlights: labels then no label": lambda n: _omnivore_notes(_repeat("#a ", n, "x")),
    "omnivore highlights: one long label run": lambda n: _omnivore_notes("#" + "a" * n + " #" + " " * n),
    "zip member names: a folder never closed": lambda n: [
        pattern.fullmatch(name)
        for pattern in (
            zipped._POCKET_PART,
            zipped._POCKET_ANNOTATIONS,
            zipped._POCKET_COLLECTION,
            zipped._OMNIVORE_METADATA,
            zipped._OMNIVORE_HIGHLIGHTS,
            zipped._OMNIVORE_CONTENT,
        )
        for name in ("a" * n, "highlights/" + "a" * n + ".m", "metadata_" + "1" * n + "_to_", "a/" * (n // 2))
    ],
    "zip member names: a drive letter": lambda n: zipped._plain("C" * n + ":"),
    "format sniffing: member names repeated without their ends": lambda n: [
        pattern.search(name)
        for pattern in known._MEMBERS.values()
        for name in (
            _repeat_bytes(b"metadata_1_to_", n),
            b"metadata_" + b"1" * n,
            _repeat_bytes(b"/collections/a", n),
            b"/collections/" + b"a" * n,
            _repeat_bytes(b"/part_1", n),
            b"files/crd_" + b"a" * n,
        )
    ],
    "format sniffing: a CSV header of one long line": lambda n: known.detect(("title," * (n // 6)).encode()),
    "import checks: URLs, digests and colours": lambda n: [
        pattern.fullmatch(text)
        for pattern in (restore_checks._URL, restore_checks._SHA256, restore_checks._COLOR)
        for text in ("http://" + "a" * n + "\x00", "http://a" + "/" * n + " ", "f" * n + "g", "#" + "a" * n)
    ],
    "import entries: control characters and URL breakers": lambda n: [
        pattern.sub("", text)
        for pattern in (import_entries._CONTROL, import_entries._URL_BREAKERS)
        for text in ("\x01" * n, "a" * n, _repeat("a\x00", n))
    ],
    "archive names: runs of unsafe characters": lambda n: [
        archive.safe_name(text) for text in ("-" * n, "é" * n, _repeat("a-", n), _repeat("..", n))
    ],
    # Link pages: what reads a fetched page's bytes and values.
    "page encoding: meta tags never closed": lambda n: [
        encodings._META_CHARSET.search(body)
        for body in (
            _repeat_bytes(b"<meta ", n),
            b"<meta charset" + b" " * n,
            _repeat_bytes(b"<meta charset=", n),
            b"<meta" + b"a" * n,
        )
    ],
    "page head: an unclosed head and blocks": lambda n: [
        head._HEAD_END.search(text) or head._BLOCK.search(text)
        for text in (_repeat("</head ", n), "</head" + " " * n, _repeat("<", n), _repeat("<body", n))
    ],
    "page values: spaces, dates, durations, numbers": lambda n: [
        values.clean_text(" \n\t" * (n // 3)),
        values.iso_date("2024-01-01" + "1" * n),
        values.readable_duration("PT1." + "1" * n + "X"),
        values.readable_duration("P" + "1" * n),
        values.number_text("1" * n + ".1"),
        values._DURATION.match("PT" + "1" * n),
    ],
    "page categories: market hosts": lambda n: [
        categories._MARKETS.search(host)
        for host in (_repeat(".amazon", n), _repeat("amazon.de.", n), "amazon." + "a" * n)
    ],
    "page offers: currencies and amounts": lambda n: [
        schema_org._CURRENCY.match("A" * n),
        re.sub(r"[^\d.,]", "", _repeat("a1", n)),
    ],
    # Search queries.
    "search query: qualifiers and quotes": lambda n: [
        _refused_or(query.parse, text)
        for text in (
            "site:" + _repeat("a.", n, "!"),
            "site:" + _repeat("0:", n, "g"),
            "before:" + "1" * n,
            '"' + "a " * (n // 2),
            _repeat("-", n),
            _repeat('a" ', n),
        )
    ],
    "search words: letters, underscores and marks": lambda n: (
        [words.split_words(text) for text in ("_" * n, _repeat("a_", n), "a" + "\u0301" * n)]
        + [list(words.written_words(text, n)) for text in ("a" + "\u0301" * n, _repeat("_a\u0301", n))]
    ),
    # What a card holds (an imported note is classified like any other).
    "card kinds: quotes and attributions": lambda n: [
        classify.is_quote(text)
        for text in ('"' + "a" * n, '"' + _repeat('" ', n), '"' + "-" * n + " ", '"a"' + " -" * (n // 2))
    ],
    "card kinds: URLs and colours": lambda n: [
        classify.url_in("http://" + "a" * n + " b"),
        classify.is_colour("#" + "a" * n),
        classify.COLOUR_SEPARATORS.split(_repeat(" ,;", n, "x")),
    ],
}

# What shows the cap kills: the expression Readwise's tags were read with before the scanner.
_QUADRATIC = re.compile(r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\"""")
PROOFS: dict[str, Callable[[int], Any]] = {
    "the old Readwise tags expression": lambda n: list(_QUADRATIC.finditer("'" + "\\'" * (n // 2))),
}

# One child runs the cases in turn (importing the code once, not once a case): before each case it
# moves its soft CPU limit to what it has used plus the case's allowance, so a case past it is
# killed by SIGXCPU alone, and the parent starts a new child at the next case.
_CHILD = textwrap.dedent(
    """
    import resource, sys, time
    from tests.hostile.test_hostile_regex import CASES, PROOFS, SIZES
    seconds, names = int(sys.argv[1]), sys.argv[2:]
    for name in names:
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = int(used.ru_utime + used.ru_stime) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (spent + seconds, resource.RLIM_INFINITY))
        print("case", name, flush=True)
        for size in SIZES:
            started = time.process_time()
            (CASES.get(name) or PROOFS[name])(size * 1024 * 1024)
            print("read", size, round(time.process_time() - started, 3), flush=True)
    """
)


def _run_cases(names: list[str], seconds: int = CASE_SECONDS) -> dict[str, list[str]]:
    """Each case's lines from the child (``read SIZE SECONDS``), and ``killed ...`` for a case
    the child died in."""
    lines: dict[str, list[str]] = {}
    while names:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(seconds), *names],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            check=False,
        )
        current = None
        for line in done.stdout.splitlines():
            if line.startswith("case "):
                current = line.removeprefix("case ")
                lines[current] = []
            elif current is not None:
                lines[current].append(line)
        if done.returncode == 0:
            break
        assert current is not None, done.stderr[-2000:]
        lines[current].append(f"killed: exit {done.returncode} {done.stderr[-1000:]}")
        names = names[names.index(current) + 1 :]
    return lines


@pytest.fixture(scope="module")
def case_lines() -> dict[str, list[str]]:
    return _run_cases(list(CASES))


@pytest.mark.parametrize("name", list(CASES))
def test_each_expression_reads_its_worst_input_in_linear_time(
    name: str, case_lines: dict[str, list[str]]
) -> None:
    lines = case_lines[name]
    read = [int(line.split()[1]) for line in lines if line.startswith("read ")]
    assert read == list(SIZES), f"killed at the CPU cap ({CASE_SECONDS} s) having read {read} MiB: {lines}"


def test_a_case_that_is_quadratic_is_killed_by_its_cap_and_the_next_case_still_runs() -> None:
    """The cap bites: the expression Readwise's tags were read with, at 1 MiB, never finishes
    within a few seconds, and the case after it runs in a new child."""
    after = next(iter(CASES))
    lines = _run_cases(["the old Readwise tags expression", after], seconds=3)
    assert lines["the old Readwise tags expression"][-1].startswith("killed"), lines
    assert [line.split()[1] for line in lines[after]] == [str(size) for size in SIZES], lines
