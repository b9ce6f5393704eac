"""/mcp driven by the official MCP SDK's client (mcp.client.streamable_http) against the real app
in process: tools from the spec, search and fetch, resources, scopes, isolation, rate limits,
confirm, and the error table."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cardvault.domain.auth import keys
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import app_env

PUBLIC_URL = "https://app.cardvault.test"


@contextlib.asynccontextmanager
async def mcp_session(
    app: Any, credential: str | None, *, modern: bool = False
) -> AsyncIterator[ClientSession]:
    """A session of the SDK's client: the initialize handshake (2025-11-25), or with
    ``modern`` the stateless 2026-07-28 revision (server/discover)."""
    headers = {"Authorization": f"Bearer {credential}"} if credential else {}
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=PUBLIC_URL, headers=headers)
    async with (
        client,
        streamable_http_client(f"{PUBLIC_URL}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        if modern:
            await session.discover()
        else:
            await session.initialize()
        yield session


def run(work: Callable[[], Awaitable[None]]) -> None:
    anyio.run(work)


def new_key(database: Database, account_id: str, scopes: str = "read write") -> str:
    with database.transaction() as session:
        return keys.create_key(session, account_id=account_id, name="mcp", scopes=scopes)[1]


@pytest.fixture
def app(settings: Settings, database: Database) -> Any:
    return create_app(settings, database)


class TestTools:
    def test_lists_every_marked_operation_with_valid_schemas_and_annotations(
        self, app: Any, database: Database, account_id: str
    ) -> None:
        key = new_key(database, account_id)

        async def work() -> None:
            async with mcp_session(app, key) as session:
                listed = (await session.list_tools()).tools
                names = {tool.name for tool in listed}
                assert {"listCards", "getExtendedCard", "createCard", "bulkCards", "listChanges"} <= names
                assert {"search", "fetch"} <= names
                for tool in listed:
                    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
                    if tool.output_schema is not None:
                        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
                    assert tool.annotations is not None
                    assert tool.annotations.read_only_hint is not None
                by_name = {tool.name: tool for tool in listed}
                assert by_name["listCards"].annotations.read_only_hint is True
                assert by_name["emptyTrash"].annotations.destructive_hint is True
                assert "confirm" in by_name["emptyTrash"].input_schema["required"]
                assert by_name["setCardFavorite"].annotations.idempotent_hint is True

        run(work)

    @pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
    def test_creates_finds_fetches_and_follows_changes(
        self, app: Any, database: Database, account_id: str, modern: bool
    ) -> None:
        key = new_key(database, account_id)

        async def work() -> None:
            async with mcp_session(app, key, modern=modern) as session:
                assert session.protocol_version == ("2026-07-28" if modern else "2025-11-25")
                created = await session.call_tool(
                    "createCard", {"body": {"content": "The quokka smiles at dawn"}}
                )
                assert not created.is_error, created.content
                card = created.structured_content["card"]
                found = await session.call_tool("listCards", {"q": "quokka"})
                assert [c["id"] for c in found.structured_content["items"]] == [card["id"]]
                searched = await session.call_tool("search", {"query": "quokka"})
                assert searched.structured_content["results"] == [
                    {
                        "id": card["id"],
                        "title": searched.structured_content["results"][0]["title"],
                        "url": f"{PUBLIC_URL}/cards/{card['id']}",
                    }
                ]
                fetched = await session.call_tool("fetch", {"id": card["id"]})
                assert fetched.structured_content["id"] == card["id"]
                assert "quokka" in fetched.structured_content["text"]
                changes = await session.call_tool("listChanges", {})
                assert not changes.is_error, changes.content
                assert card["id"] in json.dumps(changes.structured_content)
                resource = await session.read_resource(f"cardvault://cards/{card['id']}")
                assert "quokka" in resource.contents[0].text

        run(work)

    def test_a_bad_argument_is_a_tool_error_with_the_http_400_body(
        self, app: Any, database: Database, account_id: str
    ) -> None:
        key = new_key(database, account_id)
        http = app_of(app).get("/v1/cards?limit=0", headers={"Authorization": f"Bearer {key}"})

        async def work() -> None:
            async with mcp_session(app, key) as session:
                result = await session.call_tool("listCards", {"limit": 0})
                assert result.is_error
                assert result.structured_content["status"] == 400
                assert result.structured_content["code"] == http.json()["code"] == "INVALID_INPUT"
                assert result.structured_content["details"] == http.json()["details"]

        run(work)


def app_of(app: Any) -> Any:
    from starlette.testclient import TestClient

    return TestClient(app, raise_server_exceptions=False)


class TestPermissions:
    def test_a_read_key_sees_and_calls_no_writing_tool(
        self, app: Any, database: Database, account_id: str
    ) -> None:
        key = new_key(database, account_id, scopes="read")

        async def work() -> None:
            async with mcp_session(app, key) as session:
                listed = {tool.name for tool in (await session.list_tools()).tools}
                assert "listCards" in listed and "createCard" not in listed
                refused = await session.call_tool("createCard", {"body": {"content": "x"}})
                assert refused.is_error
                assert refused.structured_content["code"] == "INSUFFICIENT_SCOPE"
                assert (await session.call_tool("listCards", {})).structured_content["items"] == []

        run(work)

    def test_another_accounts_card_looks_missing(
        self, app: Any, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_key(database, new_account()), new_key(database, new_account())

        async def work() -> None:
            async with mcp_session(app, owner) as session:
                made = await session.call_tool("createCard", {"body": {"content": "mine"}})
                card_id = made.structured_content["card"]["id"]
            async with mcp_session(app, other) as session:
                theirs = await session.call_tool("getCard", {"cardId": card_id})
                missing = await session.call_tool("getCard", {"cardId": "crd_doesnotexist"})
                assert theirs.is_error and missing.is_error
                assert {**theirs.structured_content, "requestId": None} == {
                    **missing.structured_content,
                    "requestId": None,
                }
                assert theirs.structured_content["code"] == "NOT_FOUND"
                fetched = await session.call_tool("fetch", {"id": card_id})
                assert fetched.is_error and fetched.structured_content["code"] == "NOT_FOUND"
                with pytest.raises(MCPError):
                    await session.read_resource(f"cardvault://cards/{card_id}")

        run(work)

    def test_a_destructive_tool_without_confirm_changes_nothing(
        self, app: Any, database: Database, account_id: str
    ) -> None:
        key = new_key(database, account_id)

        async def work() -> None:
            async with mcp_session(app, key) as session:
                made = await session.call_tool("createCard", {"body": {"content": "keep me"}})
                card_id = made.structured_content["card"]["id"]
                assert not (await session.call_tool("trashCard", {"cardId": card_id})).is_error
                for tool, arguments in (("deleteCard", {"cardId": card_id}), ("emptyTrash", {})):
                    refused = await session.call_tool(tool, arguments)
                    assert refused.is_error
                    assert refused.structured_content["details"]["fields"][0]["field"] == "confirm"
                    in_trash = await session.call_tool("listTrash", {})
                    assert [c["id"] for c in in_trash.structured_content["items"]] == [card_id]
                deleted = await session.call_tool("deleteCard", {"cardId": card_id, "confirm": True})
                assert not deleted.is_error, deleted.content
                gone = await session.call_tool("getCard", {"cardId": card_id})
                assert gone.is_error and gone.structured_content["code"] == "NOT_FOUND"

        run(work)


def test_an_idempotency_key_makes_a_repeated_call_answer_the_first(
    app: Any, database: Database, account_id: str
) -> None:
    key = new_key(database, account_id)

    async def work() -> None:
        async with mcp_session(app, key) as session:
            arguments = {"idempotencyKey": "mcp-key-1", "body": {"content": "once"}}
            first = await session.call_tool("createCard", arguments)
            again = await session.call_tool("createCard", arguments)
            assert first.structured_content == again.structured_content
            other = await session.call_tool("createCard", {**arguments, "body": {"content": "twice"}})
            assert other.is_error and other.structured_content["code"] == "IDEMPOTENCY_KEY_REUSED"
            listed = await session.call_tool("listCards", {})
            assert len(listed.structured_content["items"]) == 1

    run(work)


def test_rate_limits_apply_to_tool_calls(tmp_path: Any, database: Database, account_id: str) -> None:
    settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_RATE_LIMIT_CARDS": "2/minute"})
    app = create_app(settings, database)
    key = new_key(database, account_id)

    async def work() -> None:
        async with mcp_session(app, key) as session:
            answers = [
                await session.call_tool("createCard", {"body": {"content": f"card {n}"}}) for n in range(3)
            ]
            assert [a.is_error for a in answers] == [False, False, True], answers[0].content
            assert answers[2].structured_content["code"] == "RATE_LIMITED"
            assert answers[2].structured_content["status"] == 429

    run(work)


def test_an_answer_over_the_cap_is_a_tool_error_and_a_smaller_one_is_not(
    app: Any, database: Database, account_id: str
) -> None:
    key = new_key(database, account_id)
    big = "w" * 500_000  # under a card's content limit; five of them are over a tool answer's cap
    cards = [
        app_of(app).post("/v1/cards", json={"content": big}, headers={"Authorization": f"Bearer {key}"})
        for _ in range(5)
    ]
    assert {card.status_code for card in cards} < {200, 201}, [card.status_code for card in cards]

    async def work() -> None:
        async with mcp_session(app, key) as session:
            refused = await session.call_tool("listCards", {"limit": 5, "include": ["content"]})
            assert refused.is_error
            assert refused.structured_content["code"] == "CONTENT_TOO_LARGE"
            assert refused.structured_content["details"]["fields"][0]["field"] == "arguments"
            smaller = await session.call_tool("listCards", {"limit": 2, "include": ["content"]})
            assert not smaller.is_error
            assert [len(card["content"]) for card in smaller.structured_content["items"]] == [500_000] * 2
            fetched = await session.call_tool("fetch", {"id": cards[0].json()["card"]["id"]})
            assert not fetched.is_error and big in fetched.structured_content["text"]

    run(work)


def test_a_write_whose_answer_is_over_the_cap_says_it_was_done_and_a_read_says_where_to_read(
    app: Any, database: Database, account_id: str
) -> None:
    key = new_key(database, account_id)
    # Each control character is six bytes of JSON: one card's answer is over the cap.
    made = app_of(app).post(
        "/v1/cards", json={"content": "\x01" * 400_000}, headers={"Authorization": f"Bearer {key}"}
    )
    assert made.status_code in (200, 201), made.status_code
    card_id = made.json()["card"]["id"]

    async def work() -> None:
        async with mcp_session(app, key) as session:
            done = await session.call_tool(
                "setCardFavorite", {"cardId": card_id, "body": {"isFavorited": True}}
            )
            # Not a success (its card cannot be carried), but said to be done, with its status.
            assert done.is_error and done.structured_content["status"] == 200
            assert "was done (200): do not send it again" in done.structured_content["error"]
            read = await session.call_tool("getCard", {"cardId": card_id})
            assert read.is_error and read.structured_content["code"] == "CONTENT_TOO_LARGE"
            assert "HTTP API" in read.structured_content["error"]

    run(work)
    got = app_of(app).get(f"/v1/cards/{card_id}", headers={"Authorization": f"Bearer {key}"})
    assert got.json()["isFavorited"] is True  # the write was made, once
