"""The rate limiter: moving windows ("at most N in any W seconds", exact), kept in Redis when
CARDVAULT_REDIS_URL is set, so every API process counts against the same windows, and in this
process's memory on the embedded default (one API process).

On Redis a request costs one round trip: the library's two moving-window scripts (count the
request, then read the window) are sent together in one pipeline.

When Redis cannot be reached the limiter fails open: ``take`` answers None (the request goes
ahead, uncounted), a warning is logged, and Redis is not asked again for a few seconds, so an
outage costs requests no connect timeouts. A policy that must never be turned off (sign-in
guesses: ``fail_open=False``) is counted in this process's memory instead meanwhile: each API
process then holds a key to the limit on its own."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import cast

import limits
import redis
from limits.errors import StorageError
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import MovingWindowRateLimiter
from limits.util import WindowStats

from cardvault.settings import Settings

log = logging.getLogger("cardvault.limiter")
REDIS_TIMEOUT_SECONDS = 0.25  # Redis answers in well under a millisecond; past this it is down
RETRY_REDIS_SECONDS = 5.0  # after a failure, requests go uncounted this long before Redis is tried


@dataclasses.dataclass(frozen=True)
class Policy:
    """A named limit: at most ``limit`` requests in any ``window_seconds``."""

    name: str
    limit: int
    window_seconds: int

    @classmethod
    def parse(cls, name: str, text: str) -> Policy:
        """Read a limit written as ``60/minute``, ``600 per hour`` or ``10/30 seconds``."""
        item = limits.parse(text)
        return cls(name=name, limit=item.amount, window_seconds=item.get_expiry())


@dataclasses.dataclass(frozen=True)
class Allowance:
    """What a policy leaves a key after a request was counted (or refused)."""

    policy: Policy
    allowed: bool
    remaining: int
    reset_at: float  # epoch seconds when the oldest request counted leaves the window


class Limiter:
    """Moving windows per (policy, key) on one storage."""

    def __init__(self, storage_uri: str) -> None:
        if storage_uri.startswith("memory://"):
            storage: MemoryStorage | RedisStorage = MemoryStorage()
        else:
            storage = RedisStorage(
                storage_uri,
                key_prefix="cardvault:limits",
                wrap_exceptions=True,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
            )
        self._storage = storage
        self._windows = MovingWindowRateLimiter(storage)
        # While Redis is unreachable: the windows of the policies that may not fail open.
        self._local = MovingWindowRateLimiter(MemoryStorage())
        self._items: dict[Policy, limits.RateLimitItem] = {}
        self._down_until = 0.0
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Limiter:
        """The limiter on Redis when the settings name one, else in memory."""
        return cls(settings.redis_url or "memory://")

    def ping(self) -> None:
        """Ask the storage whether it answers (Redis's PING; memory always does); raise
        redis's own error when it does not."""
        if isinstance(self._storage, RedisStorage):
            cast("redis.Redis", self._storage.get_connection()).ping()

    def take(self, policy: Policy, key: str, *, fail_open: bool = True, cost: int = 1) -> Allowance | None:
        """Count one request of ``key`` against the policy (``cost``: as that many, a bulk
        request's items) if the window has room for all of it (else refuse it, counting
        nothing). When the storage cannot be reached: None (uncounted), or with
        ``fail_open=False`` counted in this process's memory."""
        return self._ask(policy, key, count=True, fail_open=fail_open, cost=cost)

    def peek(self, policy: Policy, key: str, *, fail_open: bool = True) -> Allowance | None:
        """What the policy leaves ``key`` now, counting nothing."""
        return self._ask(policy, key, count=False, fail_open=fail_open)

    def give_back(self, policy: Policy, key: str, *, cost: int = 1) -> None:
        """Uncount one request of ``key`` against the policy (the newest in its window): one
        that did nothing and was answered to be retried in a moment (503), so that following
        that advice costs the account none of its window. The library has no call for it;
        each request pushes one entry at the head of the window's list (a Redis list, or a
        list in memory), and the head is dropped. A request counted in this process's memory
        while Redis was away keeps its count."""
        name = self._item(policy).key_for(key)
        storage = self._storage
        try:
            if isinstance(storage, RedisStorage):
                cast("redis.Redis", storage.get_connection()).lpop(storage.prefixed_key(name), cost)
                return
            with storage.locks[name]:
                del storage.events.get(name, [])[:cost]
        except (StorageError, redis.RedisError) as exc:
            log.warning("a request could not be uncounted: %s", exc)

    def _ask(
        self, policy: Policy, key: str, *, count: bool, fail_open: bool, cost: int = 1
    ) -> Allowance | None:
        answer = self._ask_storage(policy, key, count=count, cost=cost)
        if answer is not None or fail_open:
            return answer
        item = self._item(policy)
        allowed = self._local.hit(item, key, cost=cost) if count else True
        stats = self._local.get_window_stats(item, key)
        return Allowance(policy=policy, allowed=allowed, remaining=stats.remaining, reset_at=stats.reset_time)

    def _ask_storage(self, policy: Policy, key: str, *, count: bool, cost: int = 1) -> Allowance | None:
        if time.monotonic() < self._down_until:
            return None
        item = self._item(policy)
        try:
            if count and isinstance(self._storage, RedisStorage):
                allowed, stats = self._hit_on_redis(self._storage, item, key, cost)
            else:
                allowed = self._windows.hit(item, key, cost=cost) if count else True
                stats = self._windows.get_window_stats(item, key)
        except (StorageError, redis.RedisError) as exc:
            with self._lock:
                if time.monotonic() >= self._down_until:
                    log.warning("rate limits are not counted for %.0f s: %s", RETRY_REDIS_SECONDS, exc)
                self._down_until = time.monotonic() + RETRY_REDIS_SECONDS
            return None
        return Allowance(policy=policy, allowed=allowed, remaining=stats.remaining, reset_at=stats.reset_time)

    def _hit_on_redis(
        self, storage: RedisStorage, item: limits.RateLimitItem, key: str, cost: int
    ) -> tuple[bool, WindowStats]:
        """``hit`` then ``get_window_stats`` in one round trip: the storage's own scripts, by
        hash in one pipeline (a pipeline of registered scripts would first ask Redis whether
        they exist, a second round trip). A Redis that has lost them (restarted, flushed) gets
        the library's calls, which load them again."""
        name, expiry, now = storage.prefixed_key(item.key_for(key)), item.get_expiry(), time.time()
        # limits types the connection as a protocol of the few commands it calls; a RedisStorage's
        # is the redis.Redis it made from the URL.
        pipeline = cast("redis.Redis", storage.get_connection()).pipeline(transaction=False)
        pipeline.evalsha(storage.lua_acquire_moving_window.sha, 1, name, now, item.amount, expiry, cost)
        pipeline.evalsha(storage.lua_moving_window.sha, 1, name, now - expiry, item.amount)
        acquired, window = pipeline.execute(raise_on_error=False)
        if isinstance(acquired, redis.exceptions.NoScriptError):
            return self._windows.hit(item, key, cost=cost), self._windows.get_window_stats(item, key)
        for answer in (acquired, window):
            if isinstance(answer, redis.exceptions.NoScriptError):
                return bool(acquired), self._windows.get_window_stats(item, key)  # counted already
            if isinstance(answer, Exception):
                raise answer
        start, counted = (float(window[0]), int(window[1])) if window else (now, 0)
        return bool(acquired), WindowStats(reset_time=start + expiry, remaining=item.amount - counted)

    def _item(self, policy: Policy) -> limits.RateLimitItem:
        item = self._items.get(policy)
        if item is None:
            item = limits.RateLimitItemPerSecond(policy.limit, policy.window_seconds, namespace=policy.name)
            self._items[policy] = item
        return item
