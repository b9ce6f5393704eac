"""What a request's handler needs from its app (settings, database), bound per request."""

from __future__ import annotations

import dataclasses
import threading
import time
from contextvars import ContextVar

from cardvault.domain.db import Database
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


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The app's settings, database and per-process caches."""

    settings: Settings
    db: Database
    key_cache: KeyCache = dataclasses.field(default_factory=KeyCache)


_current: ContextVar[Runtime] = ContextVar("cardvault_runtime")


def bind(runtime: Runtime) -> None:
    """Make this runtime the one the current request's handlers see."""
    _current.set(runtime)


def current() -> Runtime:
    """Return the runtime of the app serving the current request."""
    return _current.get()
