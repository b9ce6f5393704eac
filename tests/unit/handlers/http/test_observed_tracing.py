"""Traces: a request's span (named by its operation, continuing a caller's trace) holds its SQL
statements, and each actor the request's work reaches runs in a span whose parents lead back
to it through the Dramatiq messages; spans collected by the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.testclient import TestClient

from cardvault.adapters import tracing
from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers import embedded
from tests.conftest import app_env

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def traced(tmp_path: Path, database: Database) -> Iterator[tuple[TestClient, InMemorySpanExporter, str, str]]:
    """An app built while spans go to memory (its engine's statements traced too), and a key."""
    embedded.wait_until_idle()  # no earlier test's work runs into these spans
    exporter = InMemorySpanExporter()
    tracing.use(SimpleSpanProcessor(exporter))
    try:
        settings = Settings.from_env(app_env(tmp_path, database))
        with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
            with database.transaction() as session:
                account = accounts.create_account(session, name="traced")
                key = keys.issue_api_key(session, account_id=account.id)
            yield client, exporter, key, account.id
            embedded.wait_until_idle()
    finally:
        tracing.stop()
        tracing.uninstrument_engine(database.engine)


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[ReadableSpan]:
    chain = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        chain.append(span)
    return chain


def test_a_request_and_the_actors_it_reaches_are_one_trace(
    traced: tuple[TestClient, InMemorySpanExporter, str, str],
) -> None:
    client, exporter, key, account_id = traced
    headers = {"Authorization": f"Bearer {key}", "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
    made = client.post("/v1/cards", json={"content": "https://example.com/traced"}, headers=headers)
    assert made.status_code == 200, made.text
    embedded.wait_until_idle()
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}
    (request,) = [span for span in spans if span.name == "POST createCard"]
    assert request.kind == SpanKind.SERVER
    assert f"{request.context.trace_id:032x}" == CALLER_TRACE  # the caller's trace, continued
    assert request.parent is not None and f"{request.parent.span_id:016x}" == CALLER_SPAN
    attributes = dict(request.attributes or {})
    assert (
        attributes["cardvault.operation"] == "createCard" and attributes["http.response.status_code"] == 200
    )
    assert attributes["cardvault.account"] == tracing.hashed(account_id)
    assert all(account_id not in str(value) for span in spans for value in (span.attributes or {}).values())
    statements = [
        span for span in spans if request in _ancestors(span, by_id) and span.kind == SpanKind.CLIENT
    ]
    assert any("INSERT INTO cards" in str((span.attributes or {}).get("db.statement")) for span in statements)
    # The card's stages: the first sent by the request, each next by the one before it.
    actors = [
        span
        for span in spans
        if span.context.trace_id == request.context.trace_id and span.kind == SpanKind.CONSUMER
    ]
    assert {span.name for span in actors} >= {"actor link_metadata_stage", "actor link_preview_stage"}
    for actor in actors:
        assert request in _ancestors(actor, by_id), actor.name  # its parents lead back to the request
    (first,) = [span for span in actors if span.name == "actor link_metadata_stage"]
    assert first.parent is not None and first.parent.span_id == request.context.span_id
    # A hot read goes through the driver, in a span of its own within the request's.
    exporter.clear()
    assert client.get(f"/v1/cards/{made.json()['cardId']}", headers=headers).status_code == 200
    spans = exporter.get_finished_spans()
    (read,) = [span for span in spans if span.name == "GET getCard"]
    selects = [
        span for span in spans if span.parent is not None and span.parent.span_id == read.context.span_id
    ]
    assert any("FROM cards" in str((span.attributes or {}).get("db.statement")) for span in selects)


def test_off_every_call_is_a_no_op() -> None:
    assert not tracing.on() and tracing.inject() == {}
    with tracing.span("nothing") as span:
        assert not span.is_recording()
    assert tracing.begin("actor x", {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}) is None
