"""Rate limits: markCardDone, createCard, createFolder and the tag operations count the
account's requests in moving windows; past a limit they answer 429 RATE_LIMITED and do nothing."""

from __future__ import annotations

import logging
import re
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import ATTEMPTS, Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import cli, redis_server, server_env, serving
from tests.conftest import Api, connections_cut, fresh_postgres_database

_POLICY = re.compile(r'^"(?P<name>[a-z-]+)";q=(?P<q>\d+);w=(?P<w>\d+)$')
_LEFT = re.compile(r'^"(?P<name>[a-z-]+)";r=(?P<r>\d+);t=(?P<t>\d+)$')


def _settings(tmp_path: Path, database: Database, **env: str) -> Settings:
    return Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_DATABASE_URL": database.engine.url.render_as_string(hide_password=False),
            "CARDVAULT_SECRET_KEY": "s" * 48,
            "CARDVAULT_VALIDATE_RESPONSES": "true",
            **env,
        }
    )


def _api(client: TestClient, database: Database) -> Api:
    with database.transaction() as session:
        account = accounts.create_account(session, name=f"limits-{time.time_ns()}")
        key = keys.issue_api_key(session, account_id=account.id)
    return Api(client, key, account.id)


@pytest.fixture
def limited(tmp_path: Path, database: Database) -> Iterator[TestClient]:
    """An app whose limits are small: 3 done, 2 cards, 2 folders, 2 tag operations a minute."""
    settings = _settings(
        tmp_path,
        database,
        CARDVAULT_RATE_LIMIT_DONE="3/minute",
        CARDVAULT_RATE_LIMIT_CARDS="2/minute",
        CARDVAULT_RATE_LIMIT_FOLDERS="2/minute",
        CARDVAULT_RATE_LIMIT_TAG_OPERATIONS="2/minute",
    )
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        yield client


def _left(response: Any) -> tuple[str, int, int]:
    policy = _POLICY.fullmatch(response.headers["RateLimit-Policy"])
    left = _LEFT.fullmatch(response.headers["RateLimit"])
    assert policy and left and policy["name"] == left["name"], response.headers
    return left["name"], int(left["r"]), int(left["t"])


class TestMarkCardDone:
    def test_answers_429_with_retry_at_after_its_limit_and_changes_nothing(
        self, limited: TestClient, database: Database
    ) -> None:
        api = _api(limited, database)
        link = api.create(content="https://example.com/a")["id"]
        text = api.create(cardType="text", content="x")["id"]  # two cards: the cards limit is full
        first = time.time()
        answers = [api.post(f"/v1/cards/{link}/done") for _ in range(2)]
        answers.append(api.post(f"/v1/cards/{text}/done"))  # a 400 counts too: it was a request
        assert [a.status_code for a in answers] == [200, 200, 400]
        assert [_left(a)[1] for a in answers] == [2, 1, 0]
        assert answers[0].headers["RateLimit-Policy"] == '"done";q=3;w=60'
        refused = api.post(f"/v1/cards/{link}/done")
        assert refused.status_code == 429
        body = refused.json()
        assert body == {
            "code": "RATE_LIMITED",
            "error": "Rate limit 'done' reached: at most 3 requests in any 60 s.",
            "details": {"policy": "done"},
            "requestId": refused.headers["X-Request-Id"],
            "retryAt": body["retryAt"],
        }
        # The first request counted leaves the window 60 s after it was made.
        assert first * 1000 + 60_000 - 1500 <= body["retryAt"] <= time.time() * 1000 + 60_000 + 1000
        assert 58 <= int(refused.headers["Retry-After"]) <= 60
        assert _left(refused)[:2] == ("done", 0)

    def test_counts_each_account_apart(self, limited: TestClient, database: Database) -> None:
        one, other = _api(limited, database), _api(limited, database)
        card = one.create(content="https://example.com/a")["id"]
        for _ in range(3):
            assert one.post(f"/v1/cards/{card}/done").status_code == 200
        assert one.post(f"/v1/cards/{card}/done").status_code == 429
        mine = other.create(content="https://example.com/b")["id"]
        answer = other.post(f"/v1/cards/{mine}/done")
        assert answer.status_code == 200
        assert _left(answer)[1] == 2


class TestCreateCard:
    def test_a_refused_create_makes_no_card(self, limited: TestClient, database: Database) -> None:
        api = _api(limited, database)
        api.create(content="one")
        api.create(content="two")
        refused = api.post("/v1/cards", json={"content": "three"})
        assert refused.status_code == 429
        assert refused.json()["details"] == {"policy": "cards"}
        listed = api.get("/v1/cards", params={"include": "total"}).json()
        assert listed["total"] == 2

    def test_replays_of_an_idempotency_key_count_against_no_limit(
        self, limited: TestClient, database: Database
    ) -> None:
        api = _api(limited, database)
        key = {"Idempotency-Key": "once"}
        first = api.post("/v1/cards", json={"content": "x"}, headers=key)
        replays = [api.post("/v1/cards", json={"content": "x"}, headers=key) for _ in range(3)]
        assert [r.status_code for r in replays] == [200, 200, 200]
        assert all(r.headers["Idempotent-Replayed"] == "true" for r in replays)
        assert _left(first)[1] == 1 and [_left(r)[1] for r in replays] == [1, 1, 1]
        assert _left(api.post("/v1/cards", json={}))[1] == 0  # the second request counted

    def test_the_window_moves_so_no_burst_passes_at_its_edge(
        self, tmp_path: Path, database: Database
    ) -> None:
        # The waits are measured from the first answer, so a slow request (a loaded machine)
        # cannot move the first one's end past the third: the second stays in the window unless
        # the third and fourth requests together take over 1.9 s.
        settings = _settings(tmp_path, database, CARDVAULT_RATE_LIMIT_CARDS="2/4 seconds")
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            api = _api(client, database)
            assert api.post("/v1/cards", json={}).status_code == 200
            first = time.monotonic()  # the first was counted before this
            time.sleep(2.0)
            assert api.post("/v1/cards", json={}).status_code == 200
            time.sleep(max(0.0, first + 4.05 - time.monotonic()))  # the first left the window
            assert api.post("/v1/cards", json={}).status_code == 200
            assert api.post("/v1/cards", json={}).status_code == 429  # the second has not


class TestLimitsTurnedOff:
    def test_an_operation_whose_limit_is_off_sends_no_rate_limit_headers(
        self, tmp_path: Path, database: Database
    ) -> None:
        settings = _settings(tmp_path, database, CARDVAULT_RATE_LIMIT_CARDS="off")
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            api = _api(client, database)
            response = api.post("/v1/cards", json={})
            assert response.status_code == 200
            assert "RateLimit" not in response.headers and "RateLimit-Policy" not in response.headers

    def test_an_operation_without_a_policy_sends_no_rate_limit_headers(
        self, limited: TestClient, database: Database
    ) -> None:
        api = _api(limited, database)
        assert "RateLimit-Policy" not in api.get("/v1/cards").headers


class TestTagOperations:
    def test_rename_merge_and_delete_share_one_limit(self, limited: TestClient, database: Database) -> None:
        api = _api(limited, database)
        api.create(content="x", tags=["a", "b"])  # one card; the cards limit has room for one more
        first = api.post("/v1/tags/delete", json={"tag": "nope"})
        assert first.status_code == 404  # counted all the same
        second = api.post("/v1/tags/merge", json={"from": "nope", "into": "b"})
        assert second.status_code == 404
        assert _left(second)[:2] == ("tag-operations", 0)
        third = api.post("/v1/tags/rename", json={"from": "a", "to": "c"})
        assert third.status_code == 429
        assert third.json()["details"] == {"policy": "tag-operations"}
        assert api.get("/v1/cards/" + api.get("/v1/cards").json()["items"][0]["id"]).json()["tags"] == [
            "a",
            "b",
        ]


class TestFolders:
    def test_create_folder_is_limited(self, limited: TestClient, database: Database) -> None:
        api = _api(limited, database)
        assert api.post("/v1/folders", json={"name": "one"}).status_code == 201
        assert api.post("/v1/folders", json={"name": "two"}).status_code == 201
        refused = api.post("/v1/folders", json={"name": "three"})
        assert refused.status_code == 429
        assert sorted(f["name"] for f in api.get("/v1/folders").json()["items"]) == ["one", "two"]


class TestPassingFaults:
    """A request answered 503 with nothing written (its connection lost on every try, here cut
    by a trigger) counts against no policy: the answer says to retry in a moment, and retrying
    must not use up the limit (a 2 s outage used up a day's 10 export starts)."""

    @pytest.mark.parametrize("limits", ["memory", "redis"])
    @pytest.mark.parametrize("idempotency_key", [False, True], ids=["plain", "idempotency-key"])
    def test_a_request_answered_503_service_unavailable_counts_against_no_limit(
        self,
        request: pytest.FixtureRequest,
        tmp_path: Path,
        database: Database,
        limits: str,
        idempotency_key: bool,
    ) -> None:
        if database.dialect != "postgresql":
            pytest.skip("connections that can be cut are PostgreSQL's")
        redis = {"CARDVAULT_REDIS_URL": request.getfixturevalue("own_redis")[0]} if limits == "redis" else {}
        settings = _settings(tmp_path, database, CARDVAULT_RATE_LIMIT_CARDS="2/minute", **redis)
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            api = _api(client, database)
            with connections_cut(
                database, table="cards", times=3 * ATTEMPTS, when=f"NEW.account_id = '{api.account_id}'"
            ):
                failed = [
                    api.post(
                        "/v1/cards", json={}, headers={"Idempotency-Key": f"k{n}"} if idempotency_key else {}
                    )
                    for n in range(3)
                ]
            assert [(a.status_code, a.json()["code"]) for a in failed] == [(503, "SERVICE_UNAVAILABLE")] * 3
            created = [api.post("/v1/cards", json={}) for _ in range(3)]
        assert [a.status_code for a in created] == [200, 200, 429]
        assert [_left(a)[1] for a in created[:2]] == [1, 0]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Redis server of this test's own, on a free port (so the test may stop it)."""
    with redis_server(tmp_path) as started:
        yield started


@pytest.mark.postgres
def test_two_api_processes_on_one_redis_allow_exactly_the_limit(
    own_redis: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    url = fresh_postgres_database("cardvault_limits", "two-process rate limit test")
    env = {
        **server_env(tmp_path, url),
        "CARDVAULT_REDIS_URL": own_redis[0],
        "CARDVAULT_RATE_LIMIT_CARDS": "5/minute",
    }
    cli(env, "migrate")
    cli(env, "accounts", "create", "tester")
    key = cli(env, "keys", "create", "tester")
    headers = {"Authorization": f"Bearer {key}"}
    with serving(env, tmp_path / "one.log") as one, serving(env, tmp_path / "two.log") as two:
        bases = [one, two] * 8

        def create(base: str) -> int:
            return httpx.post(f"{base}/cards", json={}, headers=headers, timeout=30).status_code

        with ThreadPoolExecutor(16) as pool:
            statuses = list(pool.map(create, bases))
        assert sorted(statuses) == [200] * 5 + [429] * 11
        assert [create(base) for base in (one, two)] == [429, 429]  # still inside the 60 s
        listed = httpx.get(f"{one}/cards", params={"include": "total"}, headers=headers, timeout=30)
        assert listed.json()["total"] == 5


class TestRedisUnreachable:
    def test_limited_requests_go_ahead_uncounted_with_a_warning_and_no_wait(
        self,
        own_redis: tuple[str, subprocess.Popen[bytes]],
        tmp_path: Path,
        database: Database,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        url, redis_process = own_redis
        settings = _settings(
            tmp_path, database, CARDVAULT_REDIS_URL=url, CARDVAULT_RATE_LIMIT_CARDS="2/minute"
        )
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            api = _api(client, database)
            counted = api.post("/v1/cards", json={})
            assert _left(counted)[1] == 1  # counted in Redis
            redis_process.kill()
            redis_process.wait()
            with caplog.at_level(logging.WARNING, logger="cardvault.limiter"):
                answers = [api.post("/v1/cards", json={}) for _ in range(3)]
            assert [a.status_code for a in answers] == [200, 200, 200]
            assert all("RateLimit" not in a.headers for a in answers)
            # One failed attempt, then Redis is left alone for a while: one warning, not three.
            assert sum("rate limits are not counted" in r.getMessage() for r in caplog.records) == 1
