"""The link-page reader (cardvault.adapters.pages.read_page) on a corpus of saved pages, with no
network: each page in tests/fixtures/pages is read as fetched from its address in expected.json,
and the fields its markup states are checked against values worked out by hand from the
documented rules (PRECEDENCE, the category rules, the facts, price, media, favicon and date rules),
not copied from the reader's output. Focused cases below go through read_page too."""

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


def test_a_relative_og_image_is_resolved_against_the_final_url() -> None:
    page = read_page(
        html('<meta property="og:image" content="../img/cover.jpg">'),
        url="https://www.example.org/blog/posts/first.html?from=feed",
        content_type="text/html",
    )
    assert page.image_url == "https://www.example.org/blog/img/cover.jpg"
    assert [item["url"] for item in page.media] == ["https://www.example.org/blog/img/cover.jpg"]


def test_a_javascript_og_image_is_dropped_for_the_next_source() -> None:
    page = read_page(
        html(
            '<meta property="og:image" content="javascript:alert(document.cookie)">'
            '<meta name="twitter:image" content="https://www.example.org/card.png">'
        ),
        url="https://www.example.org/post",
        content_type="text/html",
    )
    assert page.image_url == "https://www.example.org/card.png"
    assert page.media == ()


def test_json_ld_given_as_a_list_is_read_item_by_item() -> None:
    block = json.dumps(
        [
            {"@context": "https://schema.org", "@type": "BreadcrumbList", "itemListElement": []},
            {
                "@context": "https://schema.org",
                "@type": "Recipe",
                "name": "Quick flatbreads",
                "recipeYield": "8",
                "totalTime": "PT25M",
            },
        ]
    )
    page = read_page(
        html(f'<title>Quick flatbreads | Example</title><script type="application/ld+json">{block}</script>'),
        url="https://www.example.org/flatbreads",
        content_type="text/html; charset=utf-8",
    )
    assert page.category == "recipe"
    assert page.title == "Quick flatbreads"
    assert page.facts == (("Servings", "8"), ("Total time", "25 min"))


def test_html_without_a_content_type_is_read_as_html() -> None:
    page = read_page(
        b'<html><head><meta property="og:title" content="Sniffed"></head><body></body></html>',
        url="https://www.example.org/sniffed",
        content_type=None,
    )
    assert page.title == "Sniffed"
    assert page.content_type == "text/html"


def test_an_iso_8859_1_label_reads_as_windows_1252_like_browsers() -> None:
    """The HTML encoding standard reads the iso-8859-1 label as windows-1252, so 0x93/0x94 are
    quotation marks, not C1 control characters."""
    body = html('<meta charset="iso-8859-1"><meta property="og:title" content="Das “Café”">')
    page = read_page(
        body.decode().encode("cp1252"), url="https://www.example.at/cafe", content_type="text/html"
    )
    assert page.title == "Das “Café”"


def test_a_broken_json_ld_block_leaves_the_others() -> None:
    good = '{"@context": "https://schema.org", "@type": "Recipe", "name": "Soup", "recipeYield": "2"}'
    broken = '{"@context": "https://schema.org", "@type": "BreadcrumbList", "itemListElement": ['
    page = read_page(
        html(
            f'<script type="application/ld+json">{good}</script>'
            f'<script type="application/ld+json">{broken}</script>'
        ),
        url="https://www.example.org/soup",
        content_type="text/html",
    )
    assert page.category == "recipe"
    assert page.facts == (("Servings", "2"),)


def test_open_graph_tags_after_a_stray_element_in_the_head_still_count() -> None:
    page = read_page(
        html(
            '<title>Head title</title><div class="cookie-banner">We use cookies'
            '<meta property="og:title" content="OG title"><meta property="og:type" content="video.movie">'
        ),
        url="https://www.example.org/film",
        content_type="text/html",
    )
    assert page.title == "OG title"
    assert page.category == "movie"


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
