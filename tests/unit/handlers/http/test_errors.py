"""Authentication and framework errors: always the error body, always a request id."""

import logging
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cardvault.domain.auth import credentials
from cardvault.domain.database import open_database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.faults.disk import Filler
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_uploads import png, uploaded


class TestAuthentication:
    def test_returns_401_unauthorized_without_credentials(self, app_client: TestClient) -> None:
        response = app_client.get("/v1/cards")
        assert_error(response, 401, "UNAUTHORIZED")
        assert response.headers["www-authenticate"].startswith("Bearer")

    @pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "cvk_abc"])
    def test_returns_401_unauthorized_for_another_scheme(self, app_client: TestClient, header: str) -> None:
        assert_error(app_client.get("/v1/cards", headers={"Authorization": header}), 401, "UNAUTHORIZED")

    @pytest.mark.parametrize("token", ["nope", "cvk_" + "a" * 36, "cvk_short", "x" * 5000])
    def test_returns_401_invalid_api_key_for_a_bad_key(self, app_client: TestClient, token: str) -> None:
        response = app_client.get("/v1/cards", headers={"Authorization": f"Bearer {token}"})
        assert_error(response, 401, "INVALID_API_KEY")
        assert "invalid_token" in response.headers["www-authenticate"]

    def test_returns_401_invalid_api_key_for_an_unknown_well_formed_key(self, app_client: TestClient) -> None:
        secret = "Q" * 30
        key = f"cvk_{secret}{credentials._checksum('cvk_', secret)}"
        assert_error(
            app_client.get("/v1/cards", headers={"Authorization": f"Bearer {key}"}), 401, "INVALID_API_KEY"
        )

    def test_every_card_operation_needs_a_key(self, app_client: TestClient) -> None:
        for method, path in [
            ("POST", "/v1/cards"),
            ("GET", "/v1/cards/x"),
            ("PATCH", "/v1/cards/x"),
            ("PATCH", "/v1/cards/x/favorite"),
            ("POST", "/v1/cards/x/done"),
        ]:
            assert_error(app_client.request(method, path, json={}), 401, "UNAUTHORIZED")

    def test_health_spec_and_docs_need_no_key(self, app_client: TestClient) -> None:
        assert app_client.get("/v1/health").json() == {"status": "ok"}
        assert app_client.get("/v1/openapi.json").json()["openapi"] == "3.0.3"
        docs = app_client.get("/v1/ui/")
        assert docs.status_code == 200 and "swagger-ui" in docs.text
        assert "cdn" not in docs.text.lower() and "unpkg" not in docs.text.lower()


class TestFrameworkErrors:
    def test_unknown_route_is_404_not_found(self, api: Api) -> None:
        assert_error(api.get("/v1/nothing-here"), 404, "NOT_FOUND")
        assert_error(api.get("/elsewhere"), 404, "NOT_FOUND")

    def test_wrong_method_is_405_with_the_paths_methods(self, api: Api) -> None:
        response = api.request("DELETE", "/v1/cards")
        body = assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert response.headers["allow"] == "GET, POST"
        assert body["details"] == {"allowed": ["GET", "POST"]}
        assert api.request("PUT", "/v1/cards/abc").headers["allow"] == "GET, DELETE, PATCH"

    def test_a_client_request_id_is_echoed(self, api: Api) -> None:
        response = api.get("/v1/cards/crd_missing", headers={"X-Request-Id": "trace-42.a:b"})
        assert response.headers["x-request-id"] == "trace-42.a:b" == response.json()["requestId"]

    def test_an_unsafe_client_request_id_is_replaced(self, api: Api) -> None:
        response = api.get("/v1/cards", headers={"X-Request-Id": "bad id" + "x" * 70})
        assert response.headers["x-request-id"].startswith("req_")

    def test_success_responses_carry_a_request_id(self, api: Api) -> None:
        assert api.get("/v1/cards").headers["x-request-id"].startswith("req_")


class TestUnexpectedErrors:
    def test_a_failure_is_500_internal_error_without_internals(
        self, settings: Settings, tmp_path: Path
    ) -> None:
        # A database that was never migrated: a real failure at a boundary we do not own.
        unmigrated = open_database(f"sqlite:///{tmp_path / 'never-migrated.db'}")
        with TestClient(create_app(settings, unmigrated), raise_server_exceptions=False) as client:
            secret = "Q" * 30
            key = f"cvk_{secret}{credentials._checksum('cvk_', secret)}"
            response = client.get("/v1/cards", headers={"Authorization": f"Bearer {key}"})
        body = assert_error(response, 500, "INTERNAL_ERROR")
        assert body["details"] is None
        for leak in ("never-migrated", "no such table", "sqlite3", "Traceback"):
            assert leak not in response.text

    def test_a_database_that_cannot_be_reached_is_503_without_internals(self, settings: Settings) -> None:
        unreachable = open_database("postgresql+psycopg://cardvault:hunter2@127.0.0.1:9/db")
        with TestClient(create_app(settings, unreachable), raise_server_exceptions=False) as client:
            secret = "Q" * 30
            key = f"cvk_{secret}{credentials._checksum('cvk_', secret)}"
            response = client.get("/v1/cards", headers={"Authorization": f"Bearer {key}"})
            health = client.get("/v1/health")
        for answer in (response, health):
            body = assert_error(answer, 503, "SERVICE_UNAVAILABLE")
            assert body["details"] is None and body["retryAt"] is not None
            for leak in ("hunter2", "127.0.0.1", "psycopg", "Traceback"):
                assert leak not in answer.text


class TestStorageFull:
    def test_a_write_that_finds_the_disk_full_is_503_service_unavailable_and_logged(
        self, blobs_disk: Path, api: Api, caplog: pytest.LogCaptureFixture
    ) -> None:
        key, etag = uploaded(api, png(), "a.png", "image/png")
        with Filler(blobs_disk), caplog.at_level(logging.WARNING, "cardvault.errors"):
            response = api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        body = assert_error(response, 503, "SERVICE_UNAVAILABLE")
        assert body["details"] is None and body["retryAt"] is not None and response.headers["Retry-After"]
        assert "No space left" not in response.text  # the operator's to read, in the log
        assert any("found no room" in r.getMessage() for r in caplog.records)
        assert api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).status_code == 200
