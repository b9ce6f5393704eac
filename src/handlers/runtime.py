"""What a request's handler needs from its app (settings, database), bound per request."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.images import Decoder
from cardvault.adapters.limiter import Limiter
from cardvault.domain.db import Database
from cardvault.domain.errors import IdempotencyKeyInUse
from cardvault.settings import Settings

CACHE_SECONDS = 5.0  # a revoked key stops working within this long
_CACHE_SIZE = 10_000


class KeyCache:
    """Recently verified keys (by hash) and their accounts, so a busy client costs no lookup."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, digest: str) -> str | None:
        entry = self._entries.get(digest)
        if entry is None or entry[1] < time.monotonic():
            return None
        return entry[0]

    def put(self, digest: str, account_id: str) -> None:
        with self._lock:
            if len(self._entries) >= _CACHE_SIZE:
                self._entries.clear()
            self._entries[digest] = (account_id, time.monotonic() + CACHE_SECONDS)


class InFlight:
    """The Idempotency-Keys (per account) whose first request runs in this process now."""

    def __init__(self) -> None:
        self._keys: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, account_id: str, key: str) -> Iterator[None]:
        """Hold the key while the block runs; IdempotencyKeyInUse if a request holds it."""
        with self._lock:
            if (account_id, key) in self._keys:
                raise IdempotencyKeyInUse()
            self._keys.add((account_id, key))
        try:
            yield
        finally:
            with self._lock:
                self._keys.discard((account_id, key))


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The app's settings, database, rate limiter, blob store and per-process state."""

    settings: Settings
    db: Database
    limiter: Limiter
    store: BlobStore
    # Its child starts on first use; a request waits at most 5 s for it (then 503), so a queue
    # of images cannot hold every request thread.
    decoder: Decoder = dataclasses.field(default_factory=lambda: Decoder(wait=5.0))
    key_cache: KeyCache = dataclasses.field(default_factory=KeyCache)
    in_flight: InFlight = dataclasses.field(default_factory=InFlight)


_current: ContextVar[Runtime] = ContextVar("cardvault_runtime")


def bind(runtime: Runtime) -> None:
    """Make this runtime the one the current request's handlers see."""
    _current.set(runtime)


def current() -> Runtime:
    """Return the runtime of the app serving the current request."""
    return _current.get()
