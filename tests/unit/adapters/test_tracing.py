"""Spans of the outside systems' calls (an outbound fetch, a blob store's calls) and the
context a message carries: collected by the SDK's in-memory exporter while tracing is on."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from cardvault.adapters import tracing
from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.adapters.fetcher import Fetcher
from harness.servers import page_server


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    made = InMemorySpanExporter()
    tracing.use(SimpleSpanProcessor(made))
    try:
        yield made
    finally:
        tracing.stop()


def test_a_fetch_is_a_client_span_naming_its_host_not_its_url(exporter: InMemorySpanExporter) -> None:
    with page_server() as pages:
        pages.routes["/page"] = (200, {"Content-Type": "text/html"}, b"<html></html>")
        Fetcher(ports=(pages.port,), allow_loopback=True).fetch(pages.url("/page?token=secret-value"))
    (span,) = [span for span in exporter.get_finished_spans() if span.name == "fetch GET"]
    assert span.kind == SpanKind.CLIENT
    attributes = dict(span.attributes or {})
    assert attributes == {"server.address": "localhost", "http.response.status_code": 200}


def test_each_blob_store_call_is_a_span(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    store = LocalDiskStore(tmp_path, secret_key="s" * 48, public_url="http://127.0.0.1:8000")
    store.put("a/b", b"bytes", content_type="text/plain")
    assert store.stat("a/b") is not None
    store.delete(["a/b"])
    assert [span.name for span in exporter.get_finished_spans()] == ["blob put", "blob stat", "blob delete"]


def test_a_message_carries_the_senders_context_and_its_span_is_a_child(
    exporter: InMemorySpanExporter,
) -> None:
    with tracing.span("sender") as sender:
        carried = tracing.inject()
    assert carried["traceparent"].split("-")[1] == f"{sender.get_span_context().trace_id:032x}"
    opened = tracing.begin("actor x", carried)
    tracing.end(opened, RuntimeError("broke"))
    actor, sent = exporter.get_finished_spans()[::-1]
    assert actor.name == "actor x" and actor.parent is not None
    assert actor.parent.span_id == sent.context.span_id and actor.status.status_code == StatusCode.ERROR


def test_a_callers_trace_ids_ending_in_zeros_are_kept_at_the_share_like_any() -> None:
    exporter = InMemorySpanExporter()
    tracing.use(SimpleSpanProcessor(exporter), sample=0.1)
    chance = random.Random(7)  # fixed ids, and a fixed key: the same outcome every run
    try:
        for zeros in (True, False):
            for _ in range(400):
                trace_id = f"{chance.getrandbits(64):016x}" + (
                    "0" * 16 if zeros else f"{chance.getrandbits(64):016x}"
                )
                tracing.end(tracing.begin("actor x", {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}))
            kept = len(exporter.get_finished_spans())
            assert 20 <= kept <= 60, (zeros, kept)  # about 40 of 400 (the SDK's own sampler kept all 400)
            exporter.clear()
    finally:
        tracing.stop()


def test_every_process_keeps_the_same_traces_under_the_same_key() -> None:
    ids = [random.Random(3).getrandbits(128) for _ in range(1)] + list(range(1, 200))
    decide = [
        tracing.KeyedRatio(0.5, b"secret"),
        tracing.KeyedRatio(0.5, b"secret"),
        tracing.KeyedRatio(0.5, b"other"),
    ]
    outcomes = [[sampler.should_sample(None, i, "x").decision for i in ids] for sampler in decide]
    assert outcomes[0] == outcomes[1] != outcomes[2]


SECRET = "cvk_" + "A1b2" * 9


def test_an_exception_on_a_span_is_redacted_like_a_log_line(exporter: InMemorySpanExporter) -> None:
    with pytest.raises(RuntimeError), tracing.span("fetching"):
        raise RuntimeError(f"failed https://user:hunter2@example.com/?token=abc with {SECRET}")
    tracing.end(tracing.begin("actor x", None), ValueError(f"key {SECRET}"))
    for span in exporter.get_finished_spans():
        assert span.status.status_code == StatusCode.ERROR
        (event,) = span.events
        said = dict(event.attributes or {})
        assert event.name == "exception" and said["exception.type"] in ("RuntimeError", "ValueError")
        text = f"{said['exception.message']} {said['exception.stacktrace']} {span.status.description}"
        assert "[redacted]" in said["exception.message"]
        assert SECRET not in text and "hunter2" not in text and "token=abc" not in text
