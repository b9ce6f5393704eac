"""What a request's handler needs from its app (settings, database), bound per request."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.limiter import Limiter
from cardvault.domain.auth.passwords import PasswordParams, Passwords
from cardvault.domain.db import Database
from cardvault.domain.errors import IdempotencyKeyInUse, ServiceBusy
from cardvault.domain.files.quotas import Quotas
from cardvault.settings import Settings

T = TypeVar("T")
SIGN_IN_SLOTS = 4  # sign-ins checking a password at once in a process (as Passwords' slots)
SIGN_IN_WAITING = 32  # sign-ins waiting for a slot; past that 503 at once
CACHE_SECONDS = 5.0  # a revoked key or token stops working within this long
_CACHE_SIZE = 10_000


@dataclasses.dataclass(frozen=True)
class Holder:
    """Whom a verified credential acts for, and what it may do."""

    account_id: str
    scopes: tuple[str, ...]
    grant_id: str | None = None  # an access token's grant, or that of a key an app made
    key_id: str | None = None  # an API key's id; None for an access token
    resource: str | None = None  # an access token's audience (RFC 8707), if it was asked for one


class CredentialCache:
    """Recently verified credentials (by hash) and their holders, so a busy client costs no
    lookup; an entry lives CACHE_SECONDS, or less when the credential ends sooner."""

    def __init__(self) -> None:
        # Credentials of a grant (access tokens, keys apps made) apart from the rest, so that
        # forgetting them all is one assignment, whatever the number.
        self._granted: dict[str, tuple[Holder, float]] = {}
        self._others: dict[str, tuple[Holder, float]] = {}
        self._lock = threading.Lock()

    def get(self, digest: str) -> Holder | None:
        entry = self._others.get(digest) or self._granted.get(digest)
        if entry is None or entry[1] < time.time():
            return None
        return entry[0]

    def forget(self, digest: str) -> None:
        """Drop a credential this process revoked, so it stops working here at once."""
        with self._lock:
            self._others.pop(digest, None)
            self._granted.pop(digest, None)

    def forget_granted(self) -> None:
        """Drop every credential of a grant (access tokens, keys apps made): a grant was
        revoked, and which were its is the database's to say (each is looked up again). O(1)."""
        with self._lock:
            self._granted = {}

    def put(self, digest: str, holder: Holder, ends_at: float | None = None) -> None:
        """Remember a holder until CACHE_SECONDS from now, or ``ends_at`` (epoch seconds) if sooner."""
        until = time.time() + CACHE_SECONDS
        with self._lock:
            if len(self._granted) + len(self._others) >= _CACHE_SIZE:
                self._granted, self._others = {}, {}
            entries = self._others if holder.grant_id is None else self._granted
            entries[digest] = (holder, until if ends_at is None else min(until, ends_at))


class Admission:
    """Work that runs in a worker thread, at most ``slots`` at once, with at most ``waiting``
    more queued for a slot: past that ServiceBusy at once. The slot is taken on the event loop
    before a thread is, so a flood of password checks holds no request thread while it waits."""

    def __init__(self, slots: int, waiting: int) -> None:
        self._limiter = anyio.CapacityLimiter(slots)
        self.waiting = waiting

    @property
    def running(self) -> int:
        """Calls holding a slot now."""
        return int(self._limiter.borrowed_tokens)

    @property
    def queued(self) -> int:
        """Calls waiting for a slot now."""
        return int(self._limiter.statistics().tasks_waiting)

    async def run(self, work: Callable[..., T], *args: object) -> T:
        """Run ``work(*args)`` in a worker thread once a slot is free; ServiceBusy when the
        queue is full."""
        if self.queued >= self.waiting:
            raise ServiceBusy()
        return await anyio.to_thread.run_sync(work, *args, limiter=self._limiter)


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
    """The app's settings, database, rate limiter, blob store, password hasher and per-process
    state."""

    settings: Settings
    db: Database
    limiter: Limiter
    store: BlobStore
    passwords: Passwords
    # Its child starts on first use; a request waits at most 5 s for it (then 503), so a queue
    # of images cannot hold every request thread.
    decoder: Decoder = dataclasses.field(default_factory=lambda: Decoder(wait=5.0))
    credential_cache: CredentialCache = dataclasses.field(default_factory=CredentialCache)
    # Sign-ins wait here for a password-checking slot, on the event loop, not in a thread.
    sign_ins: Admission = dataclasses.field(default_factory=lambda: Admission(SIGN_IN_SLOTS, SIGN_IN_WAITING))
    in_flight: InFlight = dataclasses.field(default_factory=InFlight)
    # The last readiness answer and when it was asked (cardvault.handlers.system), with its lock.
    readiness: list[Any] = dataclasses.field(default_factory=list)
    readiness_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    @property
    def quotas(self) -> Quotas:
        """The accounts' storage quotas, as the settings set them."""
        return Quotas(self.settings.quota_pending_bytes, self.settings.quota_stored_bytes)


_current: ContextVar[Runtime] = ContextVar("cardvault_runtime")


def bind(runtime: Runtime) -> None:
    """Make this runtime the one the current request's handlers see."""
    _current.set(runtime)


def current() -> Runtime:
    """Return the runtime of the app serving the current request."""
    return _current.get()


def passwords_from_settings(settings: Settings) -> Passwords:
    """The password hasher with the settings' Argon2id parameters."""
    return Passwords(
        PasswordParams(
            time_cost=settings.password_time_cost,
            memory_kib=settings.password_memory_kib,
            parallelism=settings.password_parallelism,
        ),
        slots=SIGN_IN_SLOTS,
    )
