"""The link-page reader (cardvault.adapters.pages.read_page) on a corpus of saved pages, with no
network: each page in tests/fixtures/pages is read as fetched from its address in expected.json,
and the fields its markup states are checked against values worked out by hand from the
documented rules (PRECEDENCE, the category rules, the facts, price, media, favicon and date rules),
not copied from the reader's output. Focused cases, through read_page too, are in the test files
of the modules they exercise (test_values.py, test_schema_org.py, ...)."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

import pytest

from cardvault.adapters.pages import Page, read_page
from cardvault.adapters.pages.categories import VERBS

PAGES = Path(__file__).resolve().parents[3] / "fixtures" / "pages"
CASES: list[dict[str, Any]] = json.loads((PAGES / "expected.json").read_text(encoding="utf-8"))
FIELDS = {field.name for field in dataclasses.fields(Page)}


def read(case: dict[str, Any]) -> Page:
    body = (PAGES / case["file"]).read_bytes()
    return read_page(body, url=case["url"], content_type=case["contentType"])


def as_expected(field: str, value: Any) -> Any:
    """An expected.json value in the form Page holds it (facts as tuples, price with a Decimal)."""
    if field == "facts":
        return [tuple(fact) for fact in value]
    if field == "price":
        return None if value is None else (Decimal(value[0]), value[1])
    return value


def as_read(page: Page, field: str) -> Any:
    value = getattr(page, field)
    return list(value) if field in ("facts", "media") else value


def html(head: str, body: str = "<p>Some text.</p>") -> bytes:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>".encode()


@pytest.mark.parametrize("case", CASES, ids=[case["file"] for case in CASES])
def test_a_saved_page_reads_as_its_markup_states(case: dict[str, Any]) -> None:
    assert set(case["expected"]) <= FIELDS
    page = read(case)
    expected = {field: as_expected(field, value) for field, value in case["expected"].items()}
    actual = {field: as_read(page, field) for field in case["expected"]}
    assert actual == expected


def test_every_fixture_has_its_expectations() -> None:
    files = {path.name for path in PAGES.iterdir() if path.name != "expected.json"}
    assert files == {case["file"] for case in CASES}
    for case in CASES:
        assert {"title", "category", "site_name", "canonical_url"} <= set(case["expected"]), case["file"]


def test_the_corpus_covers_every_category() -> None:
    categories = {case["expected"]["category"] for case in CASES}
    assert categories >= {
        *("article", "news", "recipe", "product", "video", "movie", "music", "podcast", "game"),
        *("book", "research", "event", "document", "other"),
    }
    assert categories == set(VERBS)  # tv, course and software too: the whole vocabulary


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[object, ...]]]:
    """Every way out to the network refused, and each attempt recorded (the reader might swallow
    the error)."""
    attempts: list[tuple[object, ...]] = []

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        attempts.append(args)
        raise OSError("a unit test opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield attempts


def test_reading_the_corpus_opens_no_connection(no_network: list[tuple[object, ...]]) -> None:
    pages = [read(case) for case in CASES]
    assert all(isinstance(page, Page) for page in pages)
    assert no_network == []


def test_a_five_megabyte_page_of_nested_divs_is_read() -> None:
    """Read in a child process, so that a reader that never returns fails the test instead of
    hanging the run (the limit is a hang guard, far above any reasonable reading time)."""
    program = textwrap.dedent(
        """
        from cardvault.adapters.pages import read_page
        depth = 5 * 1024 * 1024 // len("<div></div>")
        body = b"<!DOCTYPE html><html><head><title>Deep</title></head><body>"
        body += b"<div>" * depth + b"x" + b"</div>" * depth + b"</body></html>"
        print(read_page(body, url="https://www.example.org/deep", content_type="text/html").title)
        """
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading a 5 MB page of nested divs did not return within a minute")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Deep"
