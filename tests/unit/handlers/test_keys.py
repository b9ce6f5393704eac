"""API keys over HTTP: list, create and revoke an account's keys, and the scopes a key holds."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import event, update
from starlette.testclient import TestClient

from cardvault.domain.auth import credentials, keys
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import ApiKey
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import Api

KEY_FIELDS = {"id", "name", "prefix", "lastChars", "scopes", "createdAt", "lastUsedAt"}
INVALID_TOKEN = 'Bearer realm="cardvault", error="invalid_token"'


def error_body(
    response: Any, code: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole error body expected of ``response``, its request id taken from the header."""
    return {
        "code": code,
        "error": message,
        "details": details,
        "requestId": response.headers["x-request-id"],
        "retryAt": None,
    }


def assert_insufficient_scope(response: Any, needed: str, held: list[str]) -> None:
    assert response.status_code == 403, response.text
    assert response.json() == error_body(
        response,
        "INSUFFICIENT_SCOPE",
        f"This operation needs the {needed!r} scope; this credential holds {' '.join(held) or 'none'}.",
        {"scope": needed, "heldScopes": held},
    )
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="cardvault", error="insufficient_scope", scope="{needed}"'
    )


def assert_invalid_key(response: Any) -> None:
    assert response.status_code == 401, response.text
    assert response.json() == error_body(response, "INVALID_API_KEY", "The API key is not valid.")
    assert response.headers["www-authenticate"] == INVALID_TOKEN


def with_key(api: Api, database: Database, scopes: str, name: str = "") -> Api:
    """A client for the same account with a new key holding ``scopes``."""
    with database.transaction() as session:
        _, key = keys.create_key(session, account_id=api.account_id, name=name, scopes=scopes)
    return Api(api.client, key, api.account_id)


def created(api: Api, **body: Any) -> dict[str, Any]:
    response = api.post("/v1/api-keys", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def fresh_client(settings: Settings, database: Database) -> Iterator[Callable[[], TestClient]]:
    """Another app over the same database, as another server process would be: it remembers
    no verified key (each app keeps them for runtime.CACHE_SECONDS)."""
    clients: list[TestClient] = []

    def make() -> TestClient:
        client = TestClient(create_app(settings, database), raise_server_exceptions=False)
        clients.append(client.__enter__())
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


class TestListApiKeys:
    def test_lists_live_keys_newest_first_without_the_key_or_its_hash(
        self, api: Api, database: Database
    ) -> None:
        first = created(api, name="first", scopes=["read"])
        time.sleep(0.002)  # newest first goes by the millisecond of creation
        second = created(api, name="second", scopes=["write", "read"])
        gone = created(api, name="gone")
        assert api.request("DELETE", f"/v1/api-keys/{gone['apiKey']['id']}").status_code == 204
        response = api.get("/v1/api-keys")
        assert response.status_code == 200
        items = response.json()["items"]
        assert [item["id"] for item in items[:2]] == [second["apiKey"]["id"], first["apiKey"]["id"]]
        assert len(items) == 3  # the two, and the fixture's own key (made first)
        assert items[0] == {
            "id": second["apiKey"]["id"],
            "name": "second",
            "prefix": "cvk_",
            "lastChars": second["key"][-4:],
            "scopes": ["read", "write"],
            "createdAt": second["apiKey"]["createdAt"],
            "lastUsedAt": None,
        }
        assert items[1]["scopes"] == ["read"] and items[1]["lastChars"] == first["key"][-4:]
        own = items[2]
        assert own["scopes"] == ["read", "write", "keys"] and own["lastChars"] == api.key[-4:]
        assert isinstance(own["lastUsedAt"], int)  # the requests above used it
        with database.transaction(write=False) as session:
            hashes = [row.secret_hash for row in keys.list_keys(session, account_id=api.account_id)]
        for secret in [first["key"], second["key"], api.key, *hashes]:
            assert secret not in response.text

    def test_a_key_made_before_keys_kept_their_last_characters_shows_null(
        self, api: Api, database: Database
    ) -> None:
        with database.transaction() as session:
            session.execute(update(ApiKey).where(ApiKey.account_id == api.account_id).values(last_chars=None))
        (item,) = api.get("/v1/api-keys").json()["items"]
        assert item["lastChars"] is None and set(item) == KEY_FIELDS

    def test_lists_only_the_accounts_own_keys(self, make_api: Callable[[], Api]) -> None:
        api, other = make_api(), make_api()
        created(other, name="theirs")
        (item,) = api.get("/v1/api-keys").json()["items"]
        assert item["lastChars"] == api.key[-4:]

    def test_returns_403_for_a_key_without_the_keys_scope(self, api: Api, database: Database) -> None:
        reader = with_key(api, database, "read write")
        assert_insufficient_scope(reader.get("/v1/api-keys"), "keys", ["read", "write"])


class TestCreateApiKey:
    def test_returns_the_key_once_and_it_works(self, api: Api) -> None:
        response = api.post("/v1/api-keys", json={"name": "  laptop ", "scopes": ["read"]})
        assert response.status_code == 201, response.text
        body = response.json()
        assert set(body) == {"apiKey", "key"} and set(body["apiKey"]) == KEY_FIELDS
        key, listed = body["key"], body["apiKey"]
        assert re.fullmatch(r"cvk_[0-9A-Za-z]{36}", key) and keys.is_well_formed_key(key)
        assert response.headers["location"] == f"/v1/api-keys/{listed['id']}"
        assert (listed["name"], listed["prefix"], listed["lastChars"]) == ("laptop", "cvk_", key[-4:])
        assert (listed["scopes"], listed["lastUsedAt"]) == (["read"], None)
        new = Api(api.client, key, api.account_id)
        made = api.create(content="mine")
        assert new.get(f"/v1/cards/{made['id']}").status_code == 200
        assert key not in api.get("/v1/api-keys").text

    def test_takes_the_callers_scopes_and_an_empty_name_by_default(
        self, api: Api, database: Database
    ) -> None:
        narrow = with_key(api, database, "read keys")
        listed = created(narrow)["apiKey"]
        assert (listed["name"], listed["scopes"]) == ("", ["read", "keys"])

    def test_a_scope_named_twice_counts_once(self, api: Api) -> None:
        assert created(api, scopes=["keys", "read", "keys"])["apiKey"]["scopes"] == ["read", "keys"]

    def test_returns_403_for_a_scope_the_caller_does_not_hold(self, api: Api, database: Database) -> None:
        narrow = with_key(api, database, "read keys")
        response = narrow.post("/v1/api-keys", json={"scopes": ["read", "write"]})
        assert_insufficient_scope(response, "write", ["read", "keys"])
        assert len(api.get("/v1/api-keys").json()["items"]) == 2  # nothing was made

    def test_returns_403_for_a_key_without_the_keys_scope(self, api: Api, database: Database) -> None:
        reader = with_key(api, database, "read write")
        assert_insufficient_scope(reader.post("/v1/api-keys", json={}), "keys", ["read", "write"])

    @pytest.mark.parametrize(
        ("body", "field", "message"),
        [
            ({"scopes": []}, "scopes", "must have at least 1 items"),
            ({"scopes": ["admin"]}, "scopes/0", 'must be one of: "read", "write", "keys"'),
            ({"scopes": "read"}, "scopes", "must be of type array"),
            ({"name": "x" * 101}, "name", "must be at most 100 characters"),
            ({"name": "   "}, "name", "does not have the required form"),
            ({"name": "a\u0007b"}, "name", "does not have the required form"),
            ({"name": None}, "name", "must be of type string"),
            ({"key": "cvk_chosen"}, "key", "is not a field of this object"),
        ],
    )
    def test_returns_400_for_a_bad_body(
        self, api: Api, body: dict[str, Any], field: str, message: str
    ) -> None:
        response = api.post("/v1/api-keys", json=body)
        assert response.status_code == 400, response.text
        assert response.json() == error_body(
            response,
            "INVALID_INPUT",
            f"The request body is invalid: {field} {message}.",
            {"fields": [{"location": "body", "field": field, "message": message}]},
        )
        assert len(api.get("/v1/api-keys").json()["items"]) == 1

    def test_returns_409_past_100_live_keys(self, api: Api, database: Database) -> None:
        with database.transaction() as session:
            for _ in range(keys.MAX_LIVE_KEYS - 1):  # the fixture's key is the first
                keys.create_key(session, account_id=api.account_id)
        response = api.post("/v1/api-keys", json={"name": "one too many"})
        assert response.status_code == 409, response.text
        assert response.json() == error_body(
            response,
            "KEY_LIMIT_REACHED",
            "An account keeps at most 100 live API keys: revoke one first.",
            {"limit": 100},
        )
        assert len(api.get("/v1/api-keys").json()["items"]) == 100
        oldest = api.get("/v1/api-keys").json()["items"][0]["id"]
        assert api.request("DELETE", f"/v1/api-keys/{oldest}").status_code == 204
        assert api.post("/v1/api-keys", json={}).status_code == 201

    def test_counts_against_the_api_keys_rate_limit(self, api: Api) -> None:
        first = api.post("/v1/api-keys", json={})
        second = api.post("/v1/api-keys", json={})
        assert first.headers["RateLimit-Policy"] == '"api-keys";q=30;w=3600'
        assert re.fullmatch(r'"api-keys";r=29;t=\d+', first.headers["RateLimit"])
        assert re.fullmatch(r'"api-keys";r=28;t=\d+', second.headers["RateLimit"])


class TestRevokeApiKey:
    def test_a_revoked_key_answers_401_invalid_api_key(
        self, api: Api, fresh_client: Callable[[], TestClient]
    ) -> None:
        made = created(api, name="to revoke")
        revoked = Api(api.client, made["key"], api.account_id)
        assert revoked.get("/v1/cards").status_code == 200
        response = api.request("DELETE", f"/v1/api-keys/{made['apiKey']['id']}")
        assert response.status_code == 204 and response.content == b""
        # This app may remember the key for runtime.CACHE_SECONDS; another one does not.
        assert_invalid_key(Api(fresh_client(), made["key"], api.account_id).get("/v1/cards"))
        assert made["apiKey"]["id"] not in api.get("/v1/api-keys").text

    def test_a_key_may_revoke_itself(self, api: Api, fresh_client: Callable[[], TestClient]) -> None:
        made = created(api)
        own = Api(api.client, made["key"], api.account_id)
        assert own.request("DELETE", f"/v1/api-keys/{made['apiKey']['id']}").status_code == 204
        assert_invalid_key(Api(fresh_client(), made["key"], api.account_id).get("/v1/api-keys"))

    def test_another_accounts_key_answers_404_like_a_missing_one_and_keeps_working(
        self, make_api: Callable[[], Api], fresh_client: Callable[[], TestClient]
    ) -> None:
        api, other = make_api(), make_api()
        theirs = created(other, name="theirs")
        foreign = api.request("DELETE", f"/v1/api-keys/{theirs['apiKey']['id']}")
        missing = api.request("DELETE", "/v1/api-keys/key_missing")
        for response in (foreign, missing):
            assert response.status_code == 404
            assert response.json() == error_body(response, "NOT_FOUND", "No such API key.")
        assert Api(fresh_client(), theirs["key"], other.account_id).get("/v1/cards").status_code == 200
        assert other.get("/v1/api-keys").json()["items"][0]["id"] == theirs["apiKey"]["id"]

    def test_an_already_revoked_key_answers_404(self, api: Api) -> None:
        made = created(api)
        path = f"/v1/api-keys/{made['apiKey']['id']}"
        assert api.request("DELETE", path).status_code == 204
        response = api.request("DELETE", path)
        assert response.status_code == 404
        assert response.json() == error_body(response, "NOT_FOUND", "No such API key.")

    def test_returns_403_for_a_key_without_the_keys_scope(self, api: Api, database: Database) -> None:
        made = created(api)
        writer = with_key(api, database, "write")
        response = writer.request("DELETE", f"/v1/api-keys/{made['apiKey']['id']}")
        assert_insufficient_scope(response, "keys", ["write"])
        assert made["apiKey"]["id"] in api.get("/v1/api-keys").text


class TestScopes:
    def test_a_read_only_key_reads_and_gets_403_for_writes_with_the_exact_body(
        self, api: Api, database: Database
    ) -> None:
        reader = with_key(api, database, "read")
        assert reader.get("/v1/cards").status_code == 200
        response = reader.post("/v1/cards", json={"content": "not allowed"})
        assert_insufficient_scope(response, "write", ["read"])
        assert "RateLimit" not in response.headers  # refused before the cards policy counts it
        assert reader.get("/v1/cards").json()["items"] == []
        assert_insufficient_scope(reader.get("/v1/api-keys"), "keys", ["read"])

    def test_a_write_only_key_gets_403_for_reads(self, api: Api, database: Database) -> None:
        writer = with_key(api, database, "write")
        assert writer.post("/v1/cards", json={"content": "allowed"}).status_code == 200
        assert_insufficient_scope(writer.get("/v1/cards"), "read", ["write"])


class TestLastUsedAt:
    def test_moves_when_the_key_is_used(
        self, api: Api, database: Database, fresh_client: Callable[[], TestClient]
    ) -> None:
        made = created(api)
        listed = {item["id"]: item for item in api.get("/v1/api-keys").json()["items"]}
        assert listed[made["apiKey"]["id"]]["lastUsedAt"] is None
        before = now_ms()
        assert Api(api.client, made["key"], api.account_id).get("/v1/cards").status_code == 200
        listed = {item["id"]: item for item in api.get("/v1/api-keys").json()["items"]}
        used = listed[made["apiKey"]["id"]]["lastUsedAt"]
        assert isinstance(used, int) and before <= used <= now_ms()
        # Kept to within a minute: a use over a minute later moves it again (another app, so
        # the key is looked up afresh rather than found among the recently verified).
        long_ago = used - 2 * keys.LAST_USED_STEP_MS
        with database.transaction() as session:
            session.execute(
                update(ApiKey).where(ApiKey.id == made["apiKey"]["id"]).values(last_used_at=long_ago)
            )
        assert Api(fresh_client(), made["key"], api.account_id).get("/v1/cards").status_code == 200
        listed = {item["id"]: item for item in api.get("/v1/api-keys").json()["items"]}
        assert listed[made["apiKey"]["id"]]["lastUsedAt"] >= before


class TestBearerCheck:
    def test_an_unknown_key_is_looked_up_once_though_two_schemes_accept_a_bearer_value(
        self, app_client: TestClient, database: Database
    ) -> None:
        lookups: list[str] = []

        def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if "FROM api_keys" in statement:
                lookups.append(statement)

        forged = credentials.new_secret(credentials.API_KEY)  # well-formed, never stored
        event.listen(database.engine, "before_cursor_execute", count)
        try:
            response = app_client.get("/v1/cards", headers={"Authorization": f"Bearer {forged}"})
        finally:
            event.remove(database.engine, "before_cursor_execute", count)
        assert_invalid_key(response)
        assert len(lookups) == 1
