"""A share's page in real headless Chromium against `cardvault serve`: it opens without
credentials, no script runs on it (not even one a card's text tries to smuggle in), and the
browser fetches nothing from another origin while it shows the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import BrowserContext

from harness.servers import PageServer, cli, page_server, server_env, serving

SMUGGLED = (
    '<script>document.title="ran"</script><img src="{other}/pixel.png" onerror="document.title=\'ran\'">'
    '<style>@import url("{other}/style.css");</style><iframe src="{other}/frame"></iframe>'
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, PageServer]]:
    tmp: Path = tmp_path_factory.mktemp("share-site")
    env = server_env(tmp)
    cli(env, "migrate")
    cli(env, "accounts", "create", "sharer")
    key = cli(env, "keys", "create", "sharer")
    with page_server() as other, serving(env, tmp / "server.log") as api_base:
        yield api_base, key, other


def test_the_page_runs_no_script_and_fetches_only_from_its_origin(
    context: BrowserContext, served: tuple[str, str, PageServer]
) -> None:
    api_base, key, other = served
    auth = {"Authorization": f"Bearer {key}"}
    hostile = SMUGGLED.format(other=other.url("").rstrip("/"))
    with httpx.Client(base_url=api_base, headers=auth) as api:
        folder = api.post("/folders", json={"name": "Shared"}).json()["id"]
        cards = [
            api.post("/cards", json={"content": hostile, "notes": hostile}).json()["card"]["id"],
            api.post("/cards", json={"url": other.url("/article"), "tags": ["read"]}).json()["card"]["id"],
        ]
        assert api.post(f"/folders/{folder}/cards", json={"cardIds": cards}).status_code == 200
        made = api.post("/shares", json={"folderId": folder, "includeNotes": True}).json()
    origin = api_base.removesuffix("/v1")
    url = origin + urlsplit(made["url"]).path  # the server's public URL may name another host
    page = context.new_page()
    requested: list[str] = []
    violations: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda message: violations.append(message.text))
    answer = page.goto(url)
    assert answer is not None and answer.status == 200
    page.wait_for_load_state("networkidle")
    assert page.title() == "Shared"  # no script changed it
    assert page.evaluate("document.scripts.length") == 0
    assert page.locator("article.shared").count() == 2
    assert "<script>" in page.locator("article.shared").last.inner_text()  # shown as text
    assert requested and all(r.startswith(origin + "/") for r in requested), requested
    assert other.hits == {}  # the other origin saw nothing, not even the link's page
    page.close()
