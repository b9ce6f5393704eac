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

import errno
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

log = logging.getLogger("cardvault.metrics")
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


WORKER_MESSAGES = Counter(
    "cardvault_worker_messages_total",
    "Messages the workers' actors handled, by queue, actor and outcome (completed, retried, failed, "
    "skipped).",
    ["queue", "actor", "outcome"],
)
WORKER_DURATION = Histogram(
    "cardvault_worker_message_duration_seconds",
    "Time an actor took over a message, by queue and actor.",
    ["queue", "actor"],
    buckets=_STAGE_BUCKETS,
)


JOBS = Counter(
    "cardvault_jobs_total",
    "Tag operations, exports and imports that ended, by kind and status.",
    ["kind", "status"],
)
JOB_DURATION = Histogram(
    "cardvault_job_duration_seconds",
    "Time from a job's start to its end, by kind (tag_operation, export, import).",
    ["kind"],
    buckets=(0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0),
)
JOB_BYTES = Counter(
    "cardvault_job_bytes_total",
    "Bytes of the archives exports wrote and of the files imports read, by kind.",
    ["kind"],
)
WEBHOOK_ATTEMPTS = Counter(
    "cardvault_webhook_attempts_total",
    "Webhook delivery attempts, by outcome (succeeded, gone, failed).",
    ["outcome"],
)
WEBHOOK_DURATION = Histogram(
    "cardvault_webhook_attempt_duration_seconds",
    "Time a webhook endpoint took to answer an attempt.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0),
)
DECODER_JOBS = Counter(
    "cardvault_decoder_jobs_total",
    "Files the decoder's child process was given, by job (renditions, media, captions, speech) "
    "and outcome (ok, refused, failed).",
    ["job", "outcome"],
)
DECODER_STARTS = Counter(
    "cardvault_decoder_starts_total",
    "Decoder child processes started (each after the first of a process is a restart).",
)
DECODER_PEAK_MEMORY = Gauge(
    "cardvault_decoder_peak_memory_bytes",
    "The most memory a decoder child process has held (its peak resident set).",
    multiprocess_mode="max",
)
DB_IN_USE = Gauge(
    "cardvault_db_connections_in_use",
    "Database connections checked out of the pool now.",
    multiprocess_mode="livesum",
)
DB_WAITS = Histogram(
    "cardvault_db_pool_wait_seconds",
    "Time a connection was waited for, of the checkouts that found none free.",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0),
)


def job_ended(kind: str, status: str, seconds: float, size: int | None = None) -> None:
    JOBS.labels(kind, status).inc()
    JOB_DURATION.labels(kind).observe(max(0.0, seconds))
    if size:
        JOB_BYTES.labels(kind).inc(size)


class QueueState(Protocol):
    queue: str
    ready: int
    delayed: int
    dead: int
    oldest_ms: int | None


class Queues(Collector):
    """The broker's queues as they stand when scraped: messages by state (ready, delayed, dead)
    and the age of the oldest ready one (0 when none waits). ``read`` asks the broker."""

    def __init__(self, read: Callable[[], Sequence[QueueState]]) -> None:
        self.read = read

    def describe(self) -> list[Metric]:
        return []  # (registered anew for each scrape: naming the families would read the broker twice)

    def collect(self) -> Iterator[Metric]:
        messages = GaugeMetricFamily(
            "cardvault_queue_messages", "Messages in each queue, by state.", labels=["queue", "state"]
        )
        oldest = GaugeMetricFamily(
            "cardvault_queue_oldest_message_age_seconds",
            "How long the oldest message ready to run has waited in each queue.",
            labels=["queue"],
        )
        now_ms = time.time() * 1000
        for state in self.read():
            for name in ("ready", "delayed", "dead"):
                messages.add_metric([state.queue, name], getattr(state, name))
            age = 0.0 if state.oldest_ms is None else max(0.0, (now_ms - state.oldest_ms) / 1000)
            oldest.add_metric([state.queue], age)
        yield messages
        yield oldest


def multiprocess() -> bool:
    """Whether this process writes its values for a scrape to sum (see the module's text)."""
    return bool(os.environ.get(MULTIPROCESS_DIR))


def _forget_dead_processes() -> None:
    """Drop the live gauges of processes that died (a killed server or worker process): a
    livesum would count their connections in use for ever."""
    folder = Path(os.environ[MULTIPROCESS_DIR])
    for path in folder.glob("gauge_live*_*.db"):
        pid = int(path.stem.rsplit("_", 1)[1]) if path.stem.rsplit("_", 1)[1].isdigit() else None
        if pid is None:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            mark_process_dead(pid, str(folder))  # type: ignore[no-untyped-call]  # (untyped there)
        except PermissionError:
            pass  # alive, another user's


def exposition(*read_now: Collector) -> bytes:
    """Every family in the text format: this process's, or with several processes all of
    theirs; then ``read_now``'s, collected as they are scraped (a queue's depth is the broker's
    to say, not a process's)."""
    registry = CollectorRegistry()
    if multiprocess():
        _forget_dead_processes()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # (prometheus_client leaves it untyped)
    for collector in read_now:
        registry.register(collector)
    return (generate_latest(REGISTRY) if not multiprocess() else b"") + generate_latest(registry)


def serve(host: str, port: int, *read_now: Collector, token: str | None = None) -> ThreadingHTTPServer | None:
    """Answer ``GET /metrics`` on a port of its own, from a thread (a worker process's: workers
    answer no HTTP otherwise), asking for the bearer ``token`` when there is one (as the API's
    /metrics does); None when another process holds the port (the worker processes of one
    ``cardvault worker`` share a metrics folder, so the one that answers shows them all)."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path.split("?", 1)[0] == "/metrics"
            if found and token is not None and not _bearer_is(self.headers.get("Authorization", ""), token):
                self._answer(
                    401, "application/json", _UNAUTHENTICATED, {"WWW-Authenticate": 'Bearer realm="metrics"'}
                )
            elif found:
                self._answer(200, CONTENT_TYPE, exposition(*read_now))
            else:
                self._answer(404, "text/plain", b"not found\n")

        def _answer(
            self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
            pass  # scrapes are not logged

    try:
        server = ThreadingHTTPServer((host, port), Answer)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            log.warning("the worker's metrics cannot be answered on %s:%s: %s", host, port, exc)
        return None  # in use: another process of this worker answers (or something else: see above)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="cardvault-metrics", daemon=True).start()
    return server


# The API's error body (no request id: the port answers nothing else).
_UNAUTHENTICATED = json.dumps(
    {
        "code": "UNAUTHENTICATED",
        "error": "The metrics need the bearer token set in CARDVAULT_METRICS_TOKEN.",
        "details": None,
        "requestId": None,
        "retryAt": None,
    }
).encode()


def _bearer_is(sent: str, token: str) -> bool:
    scheme, _, value = sent.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


@contextmanager
def stage_timer(stage: str) -> Iterator[None]:
    """Record how long the block (a stage's attempt) ran."""
    started = time.perf_counter()
    try:
        yield
    finally:
        STAGE_DURATION.labels(stage).observe(time.perf_counter() - started)
