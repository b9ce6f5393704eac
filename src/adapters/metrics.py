"""Prometheus metrics (prometheus_client): the families every process records, and their
exposition in the text format.

Names follow Prometheus's conventions (``cardvault_`` first, ``_total`` on counters, base units:
seconds). Label values come from small closed sets (an operationId of the spec, a status code,
a stage of the pipeline, a rate-limit policy), never from a request's own values.

Several processes (``cardvault serve --workers N``) each count their own requests. When
``PROMETHEUS_MULTIPROC_DIR`` names a folder (``cardvault serve`` sets it, to a folder of its own,
before it starts the server's processes) every process writes its values there, and the one
that answers a scrape sums them all: prometheus_client's multiprocess mode, chosen when it is
first imported, so the variable must be set before then.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own variable
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Requests: from a few milliseconds to the slowest a client waits for.
_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Pipeline stages: from a skipped stage to a transcript's minutes.
_STAGE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 180.0, 600.0)

HTTP_REQUESTS = Counter(
    "cardvault_http_requests_total",
    "HTTP requests answered, by the spec's operationId (or the kind of path) and status code.",
    ["operation", "status"],
)
HTTP_DURATION = Histogram(
    "cardvault_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response, by operationId.",
    ["operation"],
    buckets=_REQUEST_BUCKETS,
)
RATE_LIMITED = Counter(
    "cardvault_rate_limited_total",
    "Requests refused with 429 RATE_LIMITED, by rate-limit policy.",
    ["policy"],
)
STAGE_RUNS = Counter(
    "cardvault_pipeline_stage_runs_total",
    "Attempts of processing stages, by stage and outcome (completed, skipped, failed, retried, deferred).",
    ["stage", "outcome"],
)
STAGE_DURATION = Histogram(
    "cardvault_pipeline_stage_duration_seconds",
    "Time an attempt of a processing stage ran, by stage.",
    ["stage"],
    buckets=_STAGE_BUCKETS,
)


def multiprocess() -> bool:
    """Whether this process writes its values for a scrape to sum (see the module's text)."""
    return bool(os.environ.get(MULTIPROCESS_DIR))


def exposition() -> bytes:
    """Every family in the text format: this process's, or with several processes all of theirs."""
    if not multiprocess():
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # (prometheus_client leaves it untyped)
    return generate_latest(registry)


@contextmanager
def stage_timer(stage: str) -> Iterator[None]:
    """Record how long the block (a stage's attempt) ran."""
    started = time.perf_counter()
    try:
        yield
    finally:
        STAGE_DURATION.labels(stage).observe(time.perf_counter() - started)
