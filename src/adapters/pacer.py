"""Turns per key, shared by every worker: ``turn(key, every_ms)`` reserves the key's next turn,
``every_ms`` after the one before it or now, whichever is later, and answers when it is (epoch
milliseconds). Imported cards' stages take turns per host with it (cardvault.workers.pipeline).

Kept in Redis when CARDVAULT_REDIS_URL is set (one script: one round trip, atomic across
processes), else in this process's memory (the embedded default runs one worker). While Redis
cannot be reached, turns are given at once, uncounted, and a warning is logged: an outage
suspends the politeness, not the work."""

from __future__ import annotations

import logging
import threading
import time

import redis

log = logging.getLogger("cardvault.pacer")
REDIS_TIMEOUT_SECONDS = 0.25
RETRY_REDIS_SECONDS = 5.0
_PREFIX = "cardvault:turns:"
# The key holds the time its next turn is free from; it lives until then, so a quiet key leaves
# nothing behind.
_TURN = """
local now = tonumber(ARGV[1])
local every = tonumber(ARGV[2])
local turn = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now)
redis.call('SET', KEYS[1], turn + every, 'PX', turn + every - now)
return turn
"""
_MEMORY_KEYS = 10_000  # past this many keys, those free now are dropped


class Pacer:
    """Turns per key, in Redis or in memory."""

    def __init__(self, redis_url: str | None) -> None:
        self._redis = (
            None
            if redis_url is None
            else redis.Redis.from_url(
                redis_url,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
            )
        )
        self._script = None if self._redis is None else self._redis.register_script(_TURN)
        self._free: dict[str, int] = {}  # key -> when its next turn is free
        self._lock = threading.Lock()
        self._down_until = 0.0

    def turn(self, key: str, every_ms: int) -> int:
        """Reserve ``key``'s next turn and answer when it is (epoch ms; now or later)."""
        now = int(time.time() * 1000)
        if self._script is None:
            return self._turn_in_memory(key, every_ms, now)
        if time.monotonic() < self._down_until:
            return now
        try:
            return int(self._script(keys=[_PREFIX + key], args=[now, every_ms]))
        except redis.RedisError as exc:
            with self._lock:
                if time.monotonic() >= self._down_until:
                    log.warning("turns are not kept for %.0f s: %s", RETRY_REDIS_SECONDS, exc)
                self._down_until = time.monotonic() + RETRY_REDIS_SECONDS
            return now

    def _turn_in_memory(self, key: str, every_ms: int, now: int) -> int:
        with self._lock:
            if len(self._free) >= _MEMORY_KEYS:
                self._free = {k: free for k, free in self._free.items() if free > now}
            turn = max(self._free.get(key, 0), now)
            self._free[key] = turn + every_ms
            return turn
