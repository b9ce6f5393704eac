"""Turns per key, in memory and on Redis: each key's turns an interval apart, keys apart from
each other, shared by every pacer on one Redis, forgotten once passed, and given at once while
Redis is away."""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path

import pytest
import redis

from cardvault.adapters import pacer as pacer_module
from cardvault.adapters.pacer import Pacer
from harness.servers import redis_server


def _now() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("storage", ["memory", "redis"])
def test_a_keys_turns_come_an_interval_apart_and_other_keys_are_apart(storage: str, tmp_path: Path) -> None:
    def check(pacer: Pacer) -> None:
        before = _now()
        turns = [pacer.turn("example.com", 1_000) for _ in range(4)]
        assert before <= turns[0] <= _now()
        assert [b - a for a, b in itertools.pairwise(turns)] == [1_000, 1_000, 1_000]
        other = pacer.turn("example.org", 1_000)
        assert other <= _now()  # its own turns: now

    if storage == "memory":
        check(Pacer(None))
    else:
        with redis_server(tmp_path) as (url, _):
            check(Pacer(url))


def test_pacers_on_one_redis_share_the_turns_and_a_passed_turn_is_forgotten(tmp_path: Path) -> None:
    with redis_server(tmp_path) as (url, _):
        one, two = Pacer(url), Pacer(url)  # two worker processes
        first = one.turn("example.com", 200)
        assert two.turn("example.com", 200) == first + 200
        client = redis.Redis.from_url(url)
        # Kept until the next turn is free (the second's, and one interval): then gone.
        assert 200 < client.pttl("cardvault:turns:example.com") <= 400
        client.set("cardvault:turns:example.com", _now() - 1)  # as if that time had come
        assert one.turn("example.com", 200) <= _now()


def test_while_redis_is_away_turns_are_given_at_once_and_one_warning_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with redis_server(tmp_path) as (url, process):
        pacer = Pacer(url)
        pacer.turn("example.com", 60_000)
        process.kill()
        process.wait()
        with caplog.at_level(logging.WARNING, "cardvault.pacer"):
            turns = [pacer.turn("example.com", 60_000) for _ in range(3)]
    assert all(turn <= _now() for turn in turns)
    assert len([r for r in caplog.records if r.name == "cardvault.pacer"]) == 1


def test_in_memory_the_keys_free_now_are_dropped_when_the_keys_grow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pacer_module, "_MEMORY_KEYS", 3)
    pacer = Pacer(None)
    pacer.turn("a", 60_000)
    for host in ("b", "c"):
        pacer.turn(host, -1)  # free again at once
    pacer.turn("d", 60_000)
    assert set(pacer._free) == {"a", "d"}
