"""The Dramatiq broker, built once per process when this module is imported, before any actor
is declared (Dramatiq binds actors to the broker at declaration). With CARDVAULT_REDIS_URL it is
Redis, shared by API and worker processes; without it, an in-memory broker whose worker runs
inside the API process (the embedded default)."""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Retries

from cardvault.adapters import capture
from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.fetcher import Fetcher
from cardvault.adapters.pacer import Pacer
from cardvault.domain.db import Database
from cardvault.domain.pipeline import DECODER_WAIT, SPEECH_WAIT
from cardvault.settings import Settings
from cardvault.workers.measured import Measured, queue_states
from cardvault.workers.wakeable import InProcessBroker

# Redis redelivers a dead worker's unacknowledged messages once its heartbeat is this old; our
# own sweeper (cardvault.workers.sweeper) re-sends stale operations as well.
log = logging.getLogger("cardvault.broker")
HEARTBEAT_TIMEOUT_MS = 15_000
MAINTENANCE_CHANCE = 50_000  # of 1,000,000 broker calls: a dead worker's messages return soon


def _build() -> dramatiq.Broker:
    url = Settings.redis_url_from_env()
    if url is None:
        stub = InProcessBroker()
        stub.add_middleware(Measured(), before=Retries)  # (its after_ hooks run after Retries')
        stub.emit_after("process_boot")
        return stub
    # RedisBroker.__init__ has no annotations (Dramatiq types its public API, not this class).
    redis_broker = RedisBroker(  # type: ignore[no-untyped-call]
        url=url, heartbeat_timeout=HEARTBEAT_TIMEOUT_MS, maintenance_chance=MAINTENANCE_CHANCE
    )
    redis_broker.add_middleware(Measured(), before=Retries)
    return redis_broker


broker = _build()
dramatiq.set_broker(broker)

_context: dict[str, object] = {}
_capture_lock = threading.Lock()


def bind(settings: Settings, db: Database, store: BlobStore | None = None) -> None:
    """Give this process's actors their settings, database and blob store, and build their
    decoders and fetcher. The decoders are built by the first binding and kept by later ones
    (tests bind often): each keeps a child process, started on its first use."""
    _context["settings"] = settings
    _context["db"] = db
    _context["store"] = store or store_from_settings(settings)
    _context["fetcher"] = _fetcher_for(
        settings.fetch_ports, settings.fetch_allow_loopback, settings.fetch_seconds
    )
    _context["webhook_fetcher"] = _webhook_fetcher_for(
        settings.fetch_ports, settings.fetch_allow_loopback, settings.webhook_timeout_seconds
    )
    _context["pacer"] = _pacer_for(settings.redis_url)
    if "decoder" not in _context:
        _context["decoder"] = Decoder(wait=DECODER_WAIT)
        # Speech recognition has a child of its own: it keeps the model loaded.
        _context["speech"] = Decoder(wait=SPEECH_WAIT)


@functools.cache
def _pacer_for(redis_url: str | None) -> Pacer:
    return Pacer(redis_url)


@functools.cache
def _fetcher_for(ports: tuple[int, ...], allow_loopback: bool, seconds: float) -> Fetcher:
    return Fetcher(ports=ports, allow_loopback=allow_loopback, total_seconds=seconds)


@functools.cache
def _webhook_fetcher_for(ports: tuple[int, ...], allow_loopback: bool, seconds: float) -> Fetcher:
    # Standard Webhooks: an endpoint has 15 to 30 s to answer (CARDVAULT_WEBHOOK_TIMEOUT_SECONDS).
    return Fetcher(
        ports=ports,
        allow_loopback=allow_loopback,
        connect_seconds=min(5.0, seconds),
        read_seconds=seconds,
        total_seconds=seconds,
    )


def capture_browser() -> capture.CaptureBrowser | None:
    """This process's capture browser, made on first use (and made again when the settings it
    was made from change); None when there is no browser to run (no Chromium, or no
    Playwright). Its Chromium starts on its first capture."""
    with _capture_lock:
        return _capture_browser(settings())


def _capture_browser(config: Settings) -> capture.CaptureBrowser | None:
    made = _context.get("capture")
    key = (config.capture, config.fetch_ports, config.fetch_allow_loopback)
    if isinstance(made, capture.CaptureBrowser) and _context.get("capture_key") == key:
        return made
    if isinstance(made, capture.CaptureBrowser):
        made.close()
        _context.pop("capture")
    executable = capture.find_browser(config.capture.browser)
    if executable is None or not capture.playwright_installed():
        return None
    limits = capture.Limits(
        seconds=config.capture.seconds,
        max_height=config.capture.max_height,
        archive_bytes=config.capture.archive_bytes,
        memory_bytes=config.capture.memory_mb * 1024 * 1024,
        concurrency=config.capture.concurrency,
    )
    # Chromium refuses its sandbox to root: off there, with a warning at its start.
    sandbox = config.capture.sandbox and os.geteuid() != 0
    _context["capture"] = capture.CaptureBrowser(
        executable=executable, fetcher=fetcher(), limits=limits, sandbox=sandbox
    )
    _context["capture_key"] = key
    return _context["capture"]  # type: ignore[return-value]


def settings() -> Settings:
    """The settings bound for this process's actors."""
    return _context["settings"]  # type: ignore[return-value]


def blob_store() -> BlobStore:
    """The blob store bound for this process's actors."""
    return _context["store"]  # type: ignore[return-value]


def database() -> Database:
    """The database bound for this process's actors."""
    return _context["db"]  # type: ignore[return-value]


def decoder() -> Decoder:
    """The decoder bound for this process's actors: images, media and documents, in its child."""
    return _context["decoder"]  # type: ignore[return-value]


def speech_decoder() -> Decoder:
    """The decoder bound for this process's speech recognition (one file at a time)."""
    return _context["speech"]  # type: ignore[return-value]


def pacer() -> Pacer:
    """The turns per host that imported cards' fetching stages take (shared through Redis)."""
    return _context["pacer"]  # type: ignore[return-value]


def fetcher() -> Fetcher:
    """The one outbound HTTP client bound for this process's actors."""
    return _context["fetcher"]  # type: ignore[return-value]


def webhook_fetcher() -> Fetcher:
    """The outbound client that sends webhooks: the fetcher's rules, 15 s for a whole post,
    connecting included (the settings' webhook_timeout_seconds)."""
    return _context["webhook_fetcher"]  # type: ignore[return-value]


def queues() -> list[Any]:
    """The state of this broker's queues (cardvault.workers.measured.QueueState), for metrics;
    none when the broker cannot be read (the rest of a scrape is answered still)."""
    try:
        return list(queue_states(broker))
    except Exception as exc:  # Redis out of reach, or slow: said in the log, not a failed scrape
        log.warning("the queues could not be read for metrics: %s", exc)
        return []


def is_embedded() -> bool:
    """Say whether messages stay in this process (no Redis)."""
    return isinstance(broker, StubBroker)
