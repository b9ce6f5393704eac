"""One bootstrap for every process: ``bootstrap(settings)`` builds the services it runs on (the
settings, the database, the blob store, the fetchers, the decoders, the rate limiter, the
broker and tracing) into one Services object, gives them to the broker's actors, and connects
the listeners by explicit calls:

- changes -> webhooks: each commit that recorded changes of an account with an enabled
  endpoint sends its dispatcher (cardvault.workers.webhooks.dispatch_webhooks);
- the pipeline: the stages a card write queued are sent after its commit by its caller
  (cardvault.workers.pipeline.send_after_commit), on the actors bound here.

``cardvault serve`` (through create_app), ``cardvault worker`` (cardvault.workers.main),
``cardvault import``, ``cardvault doctor`` and the embedded worker (started by the app) all run on
what it built; nothing of ours registers itself when a module is imported.

What a process keeps while it lives is built once and kept by later bootstraps (tests bootstrap
often): the decoders (each keeps a child process, started on its first use), the fetchers, the
turns per host and the capture browser."""

from __future__ import annotations

import functools

from cardvault.adapters import tracing
from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.fetcher import Fetcher
from cardvault.adapters.pacer import Pacer
from cardvault.domain import changes
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.pipeline.table import DECODER_WAIT, OCR_WAIT, SPEECH_WAIT
from cardvault.services import Browsers, OcrChildren, Services
from cardvault.settings import Settings
from cardvault.workers import actors, webhooks
from cardvault.workers.broker import broker, provide


def bootstrap(
    settings: Settings,
    *,
    database: Database | None = None,
    blobs: BlobStore | None = None,
    traced_as: str | None = None,
) -> Services:
    """Build this process's services from the settings (or with the database and blob store
    given), bind them to the broker's actors and connect the listeners; ``traced_as``: the
    service name to trace this process as, when an OTLP endpoint is configured."""
    database = database or open_database(settings.database_url)
    if traced_as is not None:
        tracing.configure(settings, traced_as)
        tracing.instrument_engine(database.engine)
    decoder, speech = _decoders()
    services = Services(
        settings=settings,
        database=database,
        blobs=blobs or store_from_settings(settings),
        fetcher=_fetcher(settings.fetch_ports, settings.fetch_allow_loopback, settings.fetch_seconds),
        webhook_fetcher=_webhook_fetcher(
            settings.fetch_ports, settings.fetch_allow_loopback, settings.webhook_timeout_seconds
        ),
        decoder=decoder,
        speech=speech,
        ocr=_ocr_children(settings.ocr.concurrency),
        pacer=_pacer(settings.redis_url),
        broker=broker,
        browsers=_browsers(),
        tracing=traced_as if settings.otlp_endpoint is not None else None,
    )
    assert actors.MODULES  # every actor is declared on the broker before it is given services
    provide(services)
    changes.on_announce(webhooks.dispatch_webhooks.send)
    return services


@functools.cache
def _decoders() -> tuple[Decoder, Decoder]:
    # Speech recognition has a child of its own: it keeps the model loaded.
    return Decoder(wait=DECODER_WAIT), Decoder(wait=SPEECH_WAIT)


@functools.cache
def _ocr_children(count: int) -> OcrChildren:
    return OcrChildren(count, OCR_WAIT)


@functools.cache
def _browsers() -> Browsers:
    return Browsers()


@functools.cache
def _pacer(redis_url: str | None) -> Pacer:
    return Pacer(redis_url)


@functools.cache
def _fetcher(ports: tuple[int, ...], allow_loopback: bool, seconds: float) -> Fetcher:
    return Fetcher(ports=ports, allow_loopback=allow_loopback, total_seconds=seconds)


@functools.cache
def _webhook_fetcher(ports: tuple[int, ...], allow_loopback: bool, seconds: float) -> Fetcher:
    # Standard Webhooks: an endpoint has 15 to 30 s to answer (CARDVAULT_WEBHOOK_TIMEOUT_SECONDS).
    return Fetcher(
        ports=ports,
        allow_loopback=allow_loopback,
        connect_seconds=min(5.0, seconds),
        read_seconds=seconds,
        total_seconds=seconds,
    )
