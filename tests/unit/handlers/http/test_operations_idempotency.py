"""Idempotency-Key on the operations that create: a retry with the key replays the first
success instead of doing the work again."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import func, select, text, update
from starlette.testclient import TestClient

from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.guards.idempotency import KEEP_MS, lock_key
from cardvault.domain.models import Card, IdempotencyKey
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers.idempotency import forget_idempotency_keys
from tests.conftest import Api


def _key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


def _cards(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        return int(
            session.scalar(select(func.count()).select_from(Card).where(Card.account_id == account_id)) or 0
        )


class TestReplay:
    def test_the_same_request_with_the_same_key_replays_the_first_response(
        self, api: Api, database: Database
    ) -> None:
        key = _key()
        first = api.post("/v1/cards", json={"content": "hello", "tags": ["a"]}, headers=key)
        again = api.post("/v1/cards", json={"tags": ["a"], "content": "hello"}, headers=key)
        assert first.status_code == again.status_code == 200
        assert again.content == first.content
        assert again.headers["Idempotent-Replayed"] == "true"
        assert "Idempotent-Replayed" not in first.headers
        assert again.headers["X-Request-Id"] != first.headers["X-Request-Id"]
        assert _cards(database, api.account_id) == 1

    def test_a_replay_keeps_the_status_and_location_of_the_first(self, api: Api) -> None:
        key = _key()
        first = api.post("/v1/folders", json={"name": "Reading"}, headers=key)
        again = api.post("/v1/folders", json={"name": "Reading"}, headers=key)
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.headers["Location"] == first.headers["Location"]
        assert again.json() == first.json()

    def test_a_tag_operation_replayed_is_the_same_operation_started_once(self, api: Api) -> None:
        api.create(content="x", tags=["old"])
        key = _key()
        first = api.post("/v1/tags/rename", json={"from": "old", "to": "new"}, headers=key)
        again = api.post("/v1/tags/rename", json={"from": "old", "to": "new"}, headers=key)
        assert (first.status_code, again.status_code) == (202, 202)
        assert again.json()["id"] == first.json()["id"]  # not TAG_OPERATION_RUNNING, not a second one

    def test_folder_membership_replays(self, api: Api) -> None:
        folder = api.post("/v1/folders", json={"name": "F"}).json()["id"]
        card = api.create(content="x")["id"]
        key = _key()
        first = api.post(f"/v1/folders/{folder}/cards", json={"cardIds": [card]}, headers=key)
        again = api.post(f"/v1/folders/{folder}/cards", json={"cardIds": [card]}, headers=key)
        assert again.json() == first.json() == {"updatedIds": [card], "failedIds": [], "folderLimitIds": []}
        assert again.headers["Idempotent-Replayed"] == "true"

    def test_an_annotation_and_a_subscription_are_made_once(self, api: Api, database: Database) -> None:
        card = api.create(content="High water twice a day.")["id"]
        made = []
        for path, body in (
            (f"/v1/cards/{card}/annotations", {"quote": "twice a day"}),
            ("/v1/subscriptions", {"url": "https://blog.example.com/feed.xml"}),
        ):
            key = _key()
            first = api.post(path, json=body, headers=key)
            again = api.post(path, json=body, headers=key)
            assert (first.status_code, again.status_code) == (201, 201)
            assert again.json() == first.json() and again.headers["Location"] == first.headers["Location"]
            assert again.headers["Idempotent-Replayed"] == "true"
            made.append(first.json()["id"])
        assert [a["id"] for a in api.get(f"/v1/cards/{card}/annotations").json()["items"]] == made[:1]
        assert [s["id"] for s in api.get("/v1/subscriptions").json()["items"]] == made[1:]

    def test_keys_belong_to_the_account(self, api: Api, other_api: Api, database: Database) -> None:
        key = _key()
        mine = api.post("/v1/cards", json={"content": "mine"}, headers=key)
        theirs = other_api.post("/v1/cards", json={"content": "theirs"}, headers=key)
        assert theirs.status_code == 200 and "Idempotent-Replayed" not in theirs.headers
        assert theirs.json()["cardId"] != mine.json()["cardId"]
        assert _cards(database, other_api.account_id) == 1

    def test_a_replay_after_a_restart_comes_from_the_database(
        self, api: Api, settings: Settings, database: Database
    ) -> None:
        key = _key()
        first = api.post("/v1/cards", json={"content": "before the restart"}, headers=key)
        # A new app over a new engine: nothing of the first process survives but the database.
        reopened = open_database(database.engine.url.render_as_string(hide_password=False))
        try:
            with TestClient(create_app(settings, reopened), raise_server_exceptions=False) as client:
                again = Api(client, api.key, api.account_id).post(
                    "/v1/cards", json={"content": "before the restart"}, headers=key
                )
        finally:
            reopened.dispose()
        assert again.status_code == 200 and again.content == first.content
        assert again.headers["Idempotent-Replayed"] == "true"
        assert _cards(database, api.account_id) == 1


class TestReuse:
    def test_the_same_key_with_another_body_answers_422_and_does_nothing(
        self, api: Api, database: Database
    ) -> None:
        key = _key()
        api.post("/v1/cards", json={"content": "one"}, headers=key)
        reused = api.post("/v1/cards", json={"content": "two"}, headers=key)
        assert reused.status_code == 422
        assert reused.json() == {
            "code": "IDEMPOTENCY_KEY_REUSED",
            "error": "This Idempotency-Key was used for another request (method, path or body); "
            "send a new key for a new request.",
            "details": None,
            "requestId": reused.headers["X-Request-Id"],
            "retryAt": None,
        }
        assert _cards(database, api.account_id) == 1

    def test_the_same_key_on_another_operation_or_path_answers_422(self, api: Api) -> None:
        key = _key()
        api.post("/v1/folders", json={"name": "A"}, headers=key)
        assert api.post("/v1/tags/delete", json={"tag": "A"}, headers=key).status_code == 422
        one = api.post("/v1/folders", json={"name": "B"}).json()["id"]
        two = api.post("/v1/folders", json={"name": "C"}).json()["id"]
        card = api.create(content="x")["id"]
        key = _key()
        api.post(f"/v1/folders/{one}/cards", json={"cardIds": [card]}, headers=key)
        assert api.post(f"/v1/folders/{two}/cards", json={"cardIds": [card]}, headers=key).status_code == 422
        deleted = api.request("DELETE", f"/v1/folders/{one}/cards", json={"cardIds": [card]}, headers=key)
        assert deleted.status_code == 422


class TestFailuresLeaveTheKeyUnused:
    def test_a_request_refused_for_its_input_does_not_use_the_key(self, api: Api) -> None:
        api.post("/v1/folders", json={"name": "Taken"})
        key = _key()
        refused = api.post("/v1/folders", json={"name": "taken"}, headers=key)
        assert refused.status_code == 409 and refused.json()["code"] == "FOLDER_EXISTS"
        retried = api.post("/v1/folders", json={"name": "Free"}, headers=key)
        assert retried.status_code == 201 and "Idempotent-Replayed" not in retried.headers

    def test_a_request_that_found_nothing_does_not_use_the_key(self, api: Api) -> None:
        key = _key()
        assert api.post("/v1/tags/delete", json={"tag": "later"}, headers=key).status_code == 404
        api.create(content="x", tags=["later"])
        assert api.post("/v1/tags/delete", json={"tag": "later"}, headers=key).status_code == 202


class TestKeyForm:
    @pytest.mark.parametrize("value", [b"k" * 256, "caf\u00e9".encode(), b"tab\there"])
    def test_a_key_that_is_not_1_to_255_printable_ascii_characters_answers_400(
        self, api: Api, value: bytes, database: Database
    ) -> None:
        response = api.post("/v1/cards", json={"content": "x"}, headers={"Idempotency-Key": value})
        assert response.status_code == 400
        body = response.json()
        assert body["code"] == "INVALID_INPUT"
        assert [f["location"] for f in body["details"]["fields"]] == ["header"]
        assert [f["field"] for f in body["details"]["fields"]] == ["Idempotency-Key"]
        assert _cards(database, api.account_id) == 0

    def test_a_key_of_255_characters_is_taken(self, api: Api) -> None:
        key = {"Idempotency-Key": "k" * 255}
        first = api.post("/v1/cards", json={}, headers=key)
        assert api.post("/v1/cards", json={}, headers=key).content == first.content


class TestConcurrentRequests:
    def test_eight_at_once_with_one_key_create_one_card(self, api: Api, database: Database) -> None:
        key = _key()
        answers: list[tuple[int, bytes]] = []
        start = threading.Barrier(8)

        def send() -> None:
            start.wait()
            response = api.post("/v1/cards", json={"content": "once"}, headers=key)
            answers.append((response.status_code, response.content))

        threads = [threading.Thread(target=send) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _cards(database, api.account_id) == 1
        created = {content for status, content in answers if status == 200}
        assert len(created) == 1
        for status, content in answers:
            assert status in (200, 409), content
            if status == 409:
                assert b'"IDEMPOTENCY_KEY_IN_USE"' in content

    @pytest.mark.postgres
    def test_a_key_held_by_another_process_answers_409_with_retry_at(
        self, api: Api, database: Database
    ) -> None:
        if database.dialect != "postgresql":
            pytest.skip("the advisory lock that spans processes is PostgreSQL's")
        key = str(uuid.uuid4())
        with database.engine.connect() as other_process:
            other_process.execute(
                text("SELECT pg_advisory_lock(CAST(:k AS bigint))"), {"k": lock_key(api.account_id, key)}
            )
            response = api.post("/v1/cards", json={}, headers={"Idempotency-Key": key})
            other_process.rollback()
        assert response.status_code == 409
        body = response.json()
        assert body["code"] == "IDEMPOTENCY_KEY_IN_USE"
        assert body["retryAt"] is not None and response.headers["Retry-After"] == "1"
        assert _cards(database, api.account_id) == 0


class TestExpiry:
    def test_a_key_older_than_24_hours_is_new_again_and_is_swept(self, api: Api, database: Database) -> None:
        key = _key()
        api.post("/v1/cards", json={"content": "one"}, headers=key)
        with database.transaction() as session:
            session.execute(
                update(IdempotencyKey)
                .where(IdempotencyKey.account_id == api.account_id)
                .values(created_at=IdempotencyKey.created_at - KEEP_MS - 1)
            )
        again = api.post("/v1/cards", json={"content": "two"}, headers=key)  # not 422: the key expired
        assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers
        with database.transaction() as session:
            session.execute(
                update(IdempotencyKey)
                .where(IdempotencyKey.account_id == api.account_id)
                .values(created_at=IdempotencyKey.created_at - KEEP_MS - 1)
            )
        forget_idempotency_keys()
        forget_idempotency_keys()  # a second run finds nothing left
        with database.transaction(write=False) as session:
            left = session.scalar(
                select(func.count())
                .select_from(IdempotencyKey)
                .where(IdempotencyKey.account_id == api.account_id)
            )
        assert left == 0


@pytest.fixture
def other_api(make_api: Callable[[], Api]) -> Api:
    return make_api()
