"""The docs site in real headless Chromium: built strictly, served on a loopback port, its API
reference page renders the spec's operations with the Swagger UI bundled in the site, and the
page asks nothing of any other host."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.unit.test_docs import build_site


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The built site served on a free loopback port; its base URL."""
    site = build_site(tmp_path_factory.mktemp("docs-site"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_reference_page_shows_the_spec_operations_in_swagger_ui(
    context: BrowserContext, docs_site: str
) -> None:
    hosts: list[str] = []
    context.on("request", lambda request: hosts.append(urlsplit(request.url).netloc))
    page = context.new_page()
    page.goto(f"{docs_site}/reference/")
    # Swagger UI draws the spec inside the plugin's frame: each operation's block, by operationId.
    frame = page.frame_locator("iframe").first
    operation = frame.locator("#operations-cards-listCards")
    expect(operation).to_be_visible(timeout=30_000)
    expect(operation).to_contain_text("/cards")
    expect(operation).to_contain_text("List cards, filtered, searched and paged")
    served = urlsplit(docs_site).netloc
    assert [host for host in hosts if host and host != served] == []


def test_every_guide_is_in_the_sites_navigation(context: BrowserContext, docs_site: str) -> None:
    page = context.new_page()
    page.goto(f"{docs_site}/")
    for title in (
        "Getting started",
        "Searching",
        "Sync and webhooks",
        "Imports",
        "Files and capture",
        "Operations and production",
        "Configuration",
        "API reference",
        "Architecture",
    ):
        expect(page.locator("nav.md-nav--primary").get_by_text(title, exact=True).first).to_be_attached()
    page.goto(f"{docs_site}/architecture/")
    expect(page.locator("article h1")).to_contain_text("Architecture")
