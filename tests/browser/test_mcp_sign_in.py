"""An agent client signs a person in for /mcp, end to end against `cardvault serve`: it finds
the authorization server from /mcp's 401 (RFC 9728), registers itself (RFC 7591), the person
signs in and allows it in real headless Chromium (PKCE, RFC 8707 resource), and the official
MCP SDK's client calls tools with the token it got."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import BrowserContext, expect

from harness.servers import BIN, PageServer, cli, page_server, server_env, serving

PASSWORD = "an agent's person types this"
CALLBACK_PAGE = (200, {"Content-Type": "text/html"}, b"<!doctype html><title>Agent</title><p>Connected</p>")


@dataclass
class Site:
    base: str
    app: PageServer
    env: dict[str, str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("mcp-site")
    env = {**server_env(tmp), "CARDVAULT_PASSWORD_TIME_COST": "1", "CARDVAULT_PASSWORD_MEMORY_KIB": "8192"}
    cli(env, "migrate")
    with page_server() as app, serving(env, tmp / "server.log") as api_base:
        app.routes["/callback"] = CALLBACK_PAGE
        yield Site(api_base.removesuffix("/v1"), app, env)


def _make_account(site: Site, name: str) -> str:
    email = f"{name}@example.com"
    subprocess.run(
        [str(BIN / "cardvault"), "accounts", "create", name, "--email", email],
        env=site.env,
        input=PASSWORD + "\n",
        text=True,
        check=True,
        capture_output=True,
    )
    return email


async def _agent_calls(mcp_url: str, token: str) -> tuple[set[str], str, list[str]]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        made = await session.call_tool("createCard", {"body": {"content": "saved by an agent: otters"}})
        assert not made.is_error, made.content
        found = await session.call_tool("search", {"query": "otters"})
        return (
            tools,
            made.structured_content["card"]["id"],
            [r["id"] for r in found.structured_content["results"]],
        )


def test_an_agent_finds_registers_signs_in_with_pkce_and_calls_tools(
    site: Site, context: BrowserContext
) -> None:
    mcp_url = f"{site.base}/mcp"
    # 1. The 401 names the protected resource's metadata, which names the authorization server.
    refused = httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401
    metadata_url = re.search(r'resource_metadata="([^"]+)"', refused.headers["www-authenticate"])
    assert metadata_url
    resource = httpx.get(metadata_url.group(1)).json()
    assert resource["resource"] == mcp_url
    issuer = resource["authorization_servers"][0]
    server = httpx.get(f"{issuer}/.well-known/oauth-authorization-server").json()
    # 2. It registers itself, returning to its own loopback page.
    redirect_uri = site.app.url("/callback")
    registered = httpx.post(
        server["registration_endpoint"], json={"client_name": "Otter Agent", "redirect_uris": [redirect_uri]}
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    # 3. The person signs in and allows it in the browser.
    email = _make_account(site, "agent-person")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": "read write",
        "state": "agent-state",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": mcp_url,
    }
    page = context.new_page()
    page.goto(f"{server['authorization_endpoint']}?{urlencode(query)}")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Allow Otter Agent?")).to_be_visible()
    expect(page.locator(".scopes")).to_contain_text("read")
    expect(page.locator(".scopes")).to_contain_text("write")
    expect(page.get_by_text("registered itself")).to_be_visible()
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(f"{redirect_uri}?**")
    answered = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert answered["state"] == "agent-state"
    tokens = httpx.post(
        server["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": answered["code"],
            "redirect_uri": redirect_uri,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": mcp_url,
        },
    )
    assert tokens.status_code == 200, tokens.text
    # 4. The SDK's client calls tools with the token.
    # In a thread of its own: Playwright's sync API holds this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        tools, card_id, found = pool.submit(
            anyio.run, _agent_calls, mcp_url, tokens.json()["access_token"]
        ).result()
    assert {"createCard", "listCards", "search", "fetch"} <= tools
    assert card_id in found
