"""The services a process runs on, in one typed object: built once by cardvault.bootstrap and
handed to what needs them (the HTTP app's runtime, the actors through the broker they are bound
to, and the stages), never fetched from a module of their own."""

from __future__ import annotations

import dataclasses
import functools
import os
import queue
import threading
from pathlib import Path
from typing import Any

import dramatiq

from cardvault.adapters import capture
from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.fetcher import Fetcher
from cardvault.adapters.images import ImageRefused
from cardvault.adapters.limiter import Limiter
from cardvault.adapters.pacer import Pacer
from cardvault.domain.db import Database
from cardvault.settings import Settings


class Browsers:
    """A process's capture browser, made on first use (and made again when the settings it was
    made from change); its Chromium starts on its first capture."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: capture.CaptureBrowser | None = None
        self._key: object = None

    def get(self, config: Settings, fetcher: Fetcher) -> capture.CaptureBrowser | None:
        """The browser for these settings; None when there is none to run (no Chromium, or no
        Playwright)."""
        with self._lock:
            key = (config.capture, config.fetch_ports, config.fetch_allow_loopback)
            if self._made is not None and self._key == key:
                return self._made
            if self._made is not None:
                self._made.close()
                self._made = None
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
            self._made = capture.CaptureBrowser(
                executable=executable, fetcher=fetcher, limits=limits, sandbox=sandbox
            )
            self._key = key
            return self._made


class OcrChildren:
    """A process's OCR children (CARDVAULT_OCR_CONCURRENCY of them, each a Decoder that keeps the
    engine loaded, started on first use): a file takes a free one, waiting at most ``wait``
    seconds (then ImageRefused DECODE_BUSY)."""

    def __init__(self, count: int, wait: float) -> None:
        self.wait = wait
        # One OpenMP thread: its threads spin on two busy cores for little gain (Tesseract's own
        # advice for throughput). Set in the children only: CTranslate2's OpenMP, in the speech
        # child, hears nothing but "a, a, a" under a thread limit below its thread count.
        self.decoders = [Decoder(environment={"OMP_THREAD_LIMIT": "1"}) for _ in range(count)]
        self._free: queue.Queue[Decoder] = queue.Queue()
        for decoder in self.decoders:
            self._free.put(decoder)

    def read(self, path: Path, *, source: str, options: dict[str, Any]) -> dict[str, Any]:
        """The words in the file, read by a free child (cardvault.adapters.decoder.Decoder.ocr)."""
        try:
            decoder = self._free.get(timeout=self.wait)
        except queue.Empty:
            raise ImageRefused("DECODE_BUSY", "Other files are being read; try again in a moment.") from None
        try:
            return decoder.ocr(path, source=source, options=options)
        finally:
            self._free.put(decoder)

    def close(self) -> None:
        for decoder in self.decoders:
            decoder.close()


@dataclasses.dataclass(frozen=True)
class Services:
    """What a process's entry point, actors and stages work with."""

    settings: Settings
    database: Database
    blobs: BlobStore
    fetcher: Fetcher  # the one outbound HTTP client (links, pages, their images)
    webhook_fetcher: Fetcher  # the fetcher's rules, a webhook's time to answer
    decoder: Decoder  # images, media and documents, in its child
    speech: Decoder  # speech recognition, in a child of its own (it keeps the model loaded)
    ocr: OcrChildren  # OCR, in children of their own (each keeps the engine loaded)
    pacer: Pacer  # the turns per host that imported cards' fetching stages take
    broker: dramatiq.Broker
    browsers: Browsers
    tracing: str | None  # the service name this process's traces carry (None: not traced)

    @functools.cached_property
    def limiter(self) -> Limiter:
        """The rate limiter, made on first use: only the HTTP app and doctor count requests (in
        memory it keeps a thread of its own)."""
        return Limiter.from_settings(self.settings)

    def capture_browser(self) -> capture.CaptureBrowser | None:
        """This process's capture browser (see Browsers.get)."""
        return self.browsers.get(self.settings, self.fetcher)
