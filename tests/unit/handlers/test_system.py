"""getHealth and getReadiness: liveness answers while the process serves; readiness asks the
database, Redis (when configured) and the file store, each timed, and answers 503 naming the
one that did not answer, without its cause (which is logged)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.handlers import system
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import redis_server
from tests.conftest import app_env

ERROR_KEYS = {"code", "error", "details", "requestId", "retryAt"}


def _names(body: dict[str, object]) -> list[tuple[str, str]]:
    return [(check["name"], check["status"]) for check in body["checks"]]  # type: ignore[attr-defined,index]


def test_liveness_and_readiness_on_the_embedded_default(app_client: TestClient) -> None:
    assert app_client.get("/v1/health").json() == {"status": "ok"}
    ready = app_client.get("/v1/health/ready")
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "ready" and _names(body) == [("database", "ok"), ("storage", "ok")]
    assert all(
        isinstance(check["latencyMs"], float | int) and check["latencyMs"] >= 0 for check in body["checks"]
    )


@pytest.fixture
def with_redis(tmp_path: Path, database: Database) -> Iterator[tuple[TestClient, object]]:
    """An app configured with a Redis of the test's own, which the test may stop."""
    with redis_server(tmp_path) as (url, process):
        settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_REDIS_URL": url})
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            yield client, process


def test_readiness_names_redis_and_answers_503_once_it_stops(
    with_redis: tuple[TestClient, object], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(system, "_ASKED_SECONDS", 0.0)  # every probe asks (see the next test)
    client, process = with_redis
    ready = client.get("/v1/health/ready")
    assert ready.status_code == 200 and _names(ready.json()) == [
        ("database", "ok"),
        ("redis", "ok"),
        ("storage", "ok"),
    ]
    process.kill()  # type: ignore[attr-defined]
    process.wait()  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING, logger="cardvault.health"):
        refused = client.get("/v1/health/ready")
    assert refused.status_code == 503 and set(refused.json()) == ERROR_KEYS
    body = refused.json()
    assert body["code"] == "SERVICE_UNAVAILABLE" and body["retryAt"] is not None
    assert body["error"] == "Not ready: redis did not answer. Retry in a moment."
    assert _names(body["details"]) == [("database", "ok"), ("redis", "failed"), ("storage", "ok")]
    assert "Error" in caplog.text and "Error" not in refused.text  # the cause is logged only
    assert len(caplog.records) == 1  # asked once: the check is the answer, not retried


@pytest.mark.fresh_app  # its tmp_path is the app's data directory
def test_probes_within_a_second_are_answered_once(tmp_path: Path, app_client: TestClient) -> None:
    first = app_client.get("/v1/health/ready")
    objects = tmp_path / "blobs" / "objects"
    shutil.rmtree(objects)
    objects.write_text("a file where the store's folder was")
    second = app_client.get("/v1/health/ready")  # within the second: the first answer, reused
    assert (first.status_code, second.status_code) == (200, 200) and first.json() == second.json()


@pytest.mark.fresh_app  # its tmp_path is the app's data directory
def test_a_broken_file_store_is_not_ready(tmp_path: Path, app_client: TestClient) -> None:
    objects = tmp_path / "blobs" / "objects"
    shutil.rmtree(objects)
    objects.write_text("a file where the store's folder was")
    refused = app_client.get("/v1/health/ready")
    assert refused.status_code == 503 and _names(refused.json()["details"]) == [
        ("database", "ok"),
        ("storage", "failed"),
    ]
    assert app_client.get("/v1/health").status_code == 200  # liveness does not look at the store
