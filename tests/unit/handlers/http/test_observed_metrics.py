"""GET /metrics and what it counts: after a scripted run, the families read with
prometheus_client's own parser hold each request by operationId and status, its time, the
429s by policy and the pipeline's stage attempts by outcome; who may read them (open in the
embedded default, a bearer token when one is set, nothing in production without one)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import Database
from cardvault.domain.pipeline import table as pipeline
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers import embedded
from harness.servers import PageServer, page_server
from tests.conftest import Api, app_env
from tests.unit.domain.portability.imports.formats.conftest import fixture
from tests.unit.handlers.test_imports import finished, start
from tests.unit.handlers.test_uploads import png, uploaded

TOKEN = "metrics-token-0123456789"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(client: TestClient, **headers: str) -> Samples:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _client(tmp_path: Path, database: Database, **env: str) -> TestClient:
    settings = Settings.from_env({**app_env(tmp_path, database), **env})
    return TestClient(create_app(settings, database), raise_server_exceptions=False)


@pytest.fixture
def client(tmp_path: Path, database: Database) -> Iterator[tuple[TestClient, str]]:
    """An app on the embedded default whose cards are limited to 2 a minute, and a key."""
    with _client(tmp_path, database, CARDVAULT_RATE_LIMIT_CARDS="2/minute") as made:
        with database.transaction() as session:
            account = accounts.create_account(session, name="metrics")
            key = keys.issue_api_key(session, account_id=account.id)
        yield made, key


def test_a_scripted_run_is_counted_by_operation_status_and_policy(client: tuple[TestClient, str]) -> None:
    http, key = client
    auth = {"Authorization": f"Bearer {key}"}
    embedded.wait_until_idle()  # the sweeper's first pass (it re-sends what others left) is over
    before = _scrape(http)
    for _ in range(3):
        assert http.get("/v1/cards", headers=auth).status_code == 200
    assert http.get("/v1/cards/crd_missing", headers=auth).status_code == 404
    assert http.get("/v1/cards").status_code == 401
    assert http.get("/v1/no-such-path", headers=auth).status_code == 404
    made = [http.post("/v1/cards", json={"content": "https://example.com/a"}, headers=auth) for _ in range(3)]
    assert [r.status_code for r in made] == [200, 200, 429]
    embedded.wait_until_idle()  # the two cards' stages have run
    after = _scrape(http)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    requests = "cardvault_http_requests_total"
    assert grew(requests, operation="listCards", status="200") == 3
    assert grew(requests, operation="getCard", status="404") == 1
    assert grew(requests, operation="listCards", status="401") == 1
    assert grew(requests, operation="unrouted", status="404") == 1
    assert grew(requests, operation="createCard", status="200") == 2
    assert grew(requests, operation="createCard", status="429") == 1
    assert grew(requests, operation="metrics", status="200") == 1  # the first scrape
    duration = "cardvault_http_request_duration_seconds"
    assert grew(f"{duration}_count", operation="listCards") == 4
    assert grew(f"{duration}_bucket", operation="listCards", le="+Inf") == 4
    assert grew(f"{duration}_sum", operation="listCards") > 0
    assert grew("cardvault_rate_limited_total", policy="cards") == 1
    # Link fetching is off in tests: each card's link stage is skipped, and counted so.
    stages = "cardvault_pipeline_stage_runs_total"
    assert grew(stages, stage="linkMetadata", outcome="skipped") == 2
    assert grew("cardvault_pipeline_stage_duration_seconds_count", stage="linkMetadata") == 2
    (link,) = [stage for stage in pipeline.STAGES if stage.name == "linkMetadata"]
    handled = {"queue": link.queue, "actor": link.actor_name}
    assert grew("cardvault_worker_messages_total", **handled, outcome="completed") == 2
    assert grew("cardvault_worker_message_duration_seconds_count", **handled) == 2
    # The queues as they stand: every queue named, nothing waiting once the worker is idle.
    for state in ("ready", "delayed", "dead"):
        assert _value(after, "cardvault_queue_messages", queue=link.queue, state=state) == 0
    assert _value(after, "cardvault_queue_oldest_message_age_seconds", queue=link.queue) == 0


def test_with_a_token_the_metrics_need_it(tmp_path: Path, database: Database) -> None:
    with _client(tmp_path, database, CARDVAULT_METRICS_TOKEN=TOKEN) as http:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
            refused = http.get("/metrics", headers=headers)
            assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHENTICATED"
            assert refused.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
            assert refused.json()["requestId"] == refused.headers["X-Request-Id"]
        assert _value(_scrape(http, Authorization=f"Bearer {TOKEN}"), "cardvault_http_requests_total",
                      operation="metrics", status="401") >= 3  # fmt: skip
        posted = http.post("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert posted.status_code == 405 and posted.headers["Allow"] == "GET, HEAD"
        assert posted.json()["details"] == {"allowed": ["GET", "HEAD"]}


@pytest.mark.parametrize(
    "env",
    [{"CARDVAULT_METRICS": "false"}, {"CARDVAULT_REDIS_URL": "redis://127.0.0.1:6379/15"}],
    ids=["turned-off", "production-without-a-token"],
)
def test_otherwise_there_is_no_such_path(tmp_path: Path, database: Database, env: dict[str, str]) -> None:
    settings = Settings.from_env({**app_env(tmp_path, database), **env})
    assert (settings.metrics, settings.redis_url) != (True, None)
    counted = {"operation": "getHealth", "status": "200"}
    before = REGISTRY.get_sample_value("cardvault_http_requests_total", counted) or 0.0
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as http:
        answer = http.get("/metrics")
        assert answer.status_code == 404 and answer.json()["code"] == "NOT_FOUND"
        assert http.get("/v1/health").status_code == 200
    after = REGISTRY.get_sample_value("cardvault_http_requests_total", counted) or 0.0
    assert after == before + (0 if settings.metrics is False else 1)  # turned off: nothing counted


@pytest.fixture
def scripted(tmp_path: Path, database: Database) -> Iterator[tuple[Api, PageServer]]:
    """An app whose webhooks may post to a receiver on loopback, and a client of a new account."""
    with page_server() as receiver:
        receiver.routes["/hook"] = (200, {"Content-Type": "text/plain"}, b"ok")
        env = {"CARDVAULT_TEST_FETCH_LOOPBACK": "true", "CARDVAULT_FETCH_PORTS": str(receiver.port)}
        with _client(tmp_path, database, **env) as http:
            with database.transaction() as session:
                account = accounts.create_account(session, name="scripted")
                key = keys.issue_api_key(session, account_id=account.id)
            yield Api(http, key, account.id), receiver


def _until(check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the work did not end"
        time.sleep(0.05)


def test_every_family_after_a_scripted_run(scripted: tuple[Api, PageServer]) -> None:
    """The run: an image uploaded (the decoder's child renders it), a tag renamed, an export
    and an import, a webhook's ping delivered; then each family holds what it did."""
    api, receiver = scripted
    embedded.wait_until_idle()
    before = _scrape(api.client)
    image = png()
    key, etag = uploaded(api, image, "photo.png", "image/png")
    assert api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag, "tags": ["old"]}).status_code == 200
    renamed = api.post("/v1/tags/rename", json={"from": "old", "to": "new"}).json()
    export = api.post("/v1/exports").json()["job"]
    bookmarks = fixture("pocket.csv")
    started = start(api, bookmarks, "pocket.csv")
    assert started.status_code == 202, started.text
    made = api.post("/v1/webhooks", json={"url": receiver.url("/hook"), "events": ["*"]}).json()
    assert api.post(f"/v1/webhooks/{made['webhook']['id']}/test").status_code in (200, 202)
    _until(lambda: api.get(f"/v1/tags/operations/{renamed['id']}").json()["status"] == "completed")
    _until(lambda: api.get(f"/v1/exports/{export['id']}").json()["job"]["status"] == "ready")
    finished(api, started.json()["job"]["id"])
    _until(lambda: any(path == "/hook" for path, _, _ in list(receiver.received)))
    embedded.wait_until_idle()
    after = _scrape(api.client)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("cardvault_jobs_total", kind="tag_operation", status="completed") == 1
    assert grew("cardvault_jobs_total", kind="export", status="ready") == 1
    assert grew("cardvault_jobs_total", kind="import", status="completed") == 1
    assert grew("cardvault_job_duration_seconds_count", kind="export") == 1
    assert grew("cardvault_job_bytes_total", kind="import") == len(bookmarks)
    assert grew("cardvault_job_bytes_total", kind="export") > 0
    assert grew("cardvault_webhook_attempts_total", outcome="succeeded") >= 1
    assert grew("cardvault_webhook_attempt_duration_seconds_count") >= 1
    assert grew("cardvault_decoder_jobs_total", job="image", outcome="ok") >= 1
    assert _value(after, "cardvault_decoder_peak_memory_bytes") > 1024 * 1024
    assert ("cardvault_decoder_starts_total", ()) in after
    assert ("cardvault_db_connections_in_use", ()) in after and (
        "cardvault_db_pool_wait_seconds_count",
        (),
    ) in after
    assert grew("cardvault_pipeline_stage_runs_total", stage="renditions", outcome="completed") == 1
    families = {name.removesuffix("_total").removesuffix("_count") for name, _ in after}
    assert {
        "cardvault_http_requests",
        "cardvault_http_request_duration_seconds",
        "cardvault_worker_messages",
        "cardvault_queue_messages",
        "cardvault_queue_oldest_message_age_seconds",
        "cardvault_pipeline_stage_runs",
    } <= families
