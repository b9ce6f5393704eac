"""Hostile requests to /mcp: malformed JSON-RPC, batches (none is taken, however large), unknown
methods and tools, arguments of the wrong shape, climbing paths. Every answer is a JSON-RPC
error or a tool error (never a 500), and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _rpc(method: str, params: Any = None, id_: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        **({"params": params} if params is not None else {}),
    }


def _call(name: Any, arguments: Any) -> bytes:
    return json.dumps(_rpc("tools/call", {"name": name, "arguments": arguments})).encode()


# Each answered with a JSON-RPC error object (HTTP 200 or 4xx).
PROTOCOL_ERRORS: dict[str, bytes] = {
    "not JSON": b"{not json",
    "bytes not UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
    "nested past any stack": b"[" * 100_000,
    "a number": b"42",
    "a string": b'"tools/list"',
    "null": b"null",
    "an empty batch": b"[]",
    "a batch": json.dumps([_rpc("ping", id_=n) for n in range(3)]).encode(),
    "an oversized batch": json.dumps([_rpc("tools/list", id_=n) for n in range(5000)]).encode(),
    "a batch of calls": json.dumps(
        [json.loads(_call("createCard", {"body": {"content": "x"}}))] * 50
    ).encode(),
    "no jsonrpc member": json.dumps({"id": 1, "method": "ping"}).encode(),
    "jsonrpc 1.0": json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}).encode(),
    "a method that is no string": json.dumps({"jsonrpc": "2.0", "id": 1, "method": 7}).encode(),
    "an unknown method": json.dumps(_rpc("cards/steal")).encode(),
    "a method of the client": json.dumps(_rpc("sampling/createMessage", {})).encode(),
    "params of the wrong shape": json.dumps(_rpc("tools/call", [1, 2])).encode(),
    "a tool name that is no string": _call(5, {}),
    "arguments that are no object": _call("listCards", [1]),
    "an unknown resource scheme": json.dumps(_rpc("resources/read", {"uri": "file:///etc/passwd"})).encode(),
    "a climbing resource": json.dumps(
        _rpc("resources/read", {"uri": "cardvault://cards/../../keys"})
    ).encode(),
}
# Not requests (the SDK reads an id that is no string or integer, or a result, as a message
# that takes no answer): 202, nothing done.
UNANSWERED: dict[str, bytes] = {
    "an object id": json.dumps(_rpc("ping", id_={"a": 1})).encode(),
    "a list id": json.dumps(
        _rpc("tools/call", {"name": "emptyTrash", "arguments": {"confirm": True}}, [1])
    ).encode(),
    "a response to nothing": b'{"jsonrpc":"2.0","id":1,"result":{}}',
    "a notification of a call": json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {}}).encode(),
}
# Each answered with a tool error (isError) carrying the API's error body.
TOOL_ERRORS: dict[str, bytes] = {
    "an unknown tool": _call("dropDatabase", {}),
    "an unknown argument": _call("listCards", {"sql": "drop table cards"}),
    "a wrong type": _call("listCards", {"limit": "many"}),
    "a huge limit": _call("listCards", {"limit": 10**30}),
    "a climbing path": _call("getCard", {"cardId": "../../api-keys"}),
    "a slash in an id": _call("getCard", {"cardId": "a/b"}),
    "a NUL in an id": _call("getCard", {"cardId": "crd_\u0000"}),
    "a body that is no object": _call("createCard", {"body": [1, 2]}),
    "a body field unknown": _call("createCard", {"body": {"content": "x", "accountId": "acc_other"}}),
    "a header that is not ASCII": _call("createCard", {"idempotencyKey": "ключ", "body": {"content": "x"}}),
    "a destructive call with confirm false": _call("emptyTrash", {"confirm": False}),
    "a destructive call with confirm a string": _call("emptyTrash", {"confirm": "true"}),
    "search without a query": _call("search", {}),
    "fetch of a number": _call("fetch", {"id": 5}),
}


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[tuple[TestClient, str]]:
    from tests.conftest import app_env

    settings = Settings.from_env(app_env(tmp_path_factory.mktemp("mcp"), database))
    with database.transaction() as session:
        account = accounts.create_account(session, name="hostile-mcp")
        key = keys.issue_api_key(session, account_id=account.id)
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        yield client, key


def _cards(database: Database) -> int:
    with database.transaction(write=False) as session:
        return int(session.scalar(select(func.count()).select_from(Card)) or 0)


@pytest.mark.parametrize("name", list(PROTOCOL_ERRORS))
def test_a_malformed_message_is_a_json_rpc_error(
    mcp: tuple[TestClient, str], database: Database, name: str
) -> None:
    client, key = mcp
    before = _cards(database)
    answer = client.post(
        "/mcp", content=PROTOCOL_ERRORS[name], headers={**HEADERS, "Authorization": f"Bearer {key}"}
    )
    assert answer.status_code < 500, answer.text
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and isinstance(body["error"]["code"], int), body
    assert _cards(database) == before


@pytest.mark.parametrize("name", list(UNANSWERED))
def test_a_message_that_is_no_request_is_accepted_and_does_nothing(
    mcp: tuple[TestClient, str], database: Database, name: str
) -> None:
    client, key = mcp
    before = _cards(database)
    answer = client.post(
        "/mcp", content=UNANSWERED[name], headers={**HEADERS, "Authorization": f"Bearer {key}"}
    )
    assert answer.status_code == 202, answer.text
    assert _cards(database) == before


@pytest.mark.parametrize("name", list(TOOL_ERRORS))
def test_a_hostile_call_is_a_tool_error(mcp: tuple[TestClient, str], database: Database, name: str) -> None:
    client, key = mcp
    before = _cards(database)
    answer = client.post(
        "/mcp", content=TOOL_ERRORS[name], headers={**HEADERS, "Authorization": f"Bearer {key}"}
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"] is True, result
    assert {"code", "error", "details", "requestId", "retryAt"} <= set(result["structuredContent"])
    assert result["structuredContent"]["code"] != "INTERNAL_ERROR"
    assert _cards(database) == before


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer cvk_notakey"},
        {"Authorization": "Bearer cva_" + "A" * 36},
    ],
    ids=["none", "basic", "empty", "malformed key", "made-up token"],
)
def test_no_credential_is_401_with_resource_metadata(
    mcp: tuple[TestClient, str], headers: dict[str, str]
) -> None:
    client, _ = mcp
    answer = client.post("/mcp", content=json.dumps(_rpc("tools/list")), headers={**HEADERS, **headers})
    assert answer.status_code == 401
    assert "resource_metadata=" in answer.headers["www-authenticate"]


def test_a_body_past_the_limit_is_refused_unread(mcp: tuple[TestClient, str]) -> None:
    client, key = mcp
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 2_000_000 + b'"}}'
    answer = client.post("/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {key}"})
    assert answer.status_code == 413
