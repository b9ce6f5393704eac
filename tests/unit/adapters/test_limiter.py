"""The limiter on its two storages: exact moving windows, counted once per request (or given
back), and on Redis one round trip that survives a Redis which has lost the library's
scripts."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cardvault.adapters.limiter import Limiter, Policy
from harness.servers import redis_server

POLICY = Policy.parse("cards", "3/minute")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    with redis_server(tmp_path) as started:
        yield started


@pytest.fixture(params=["memory", "redis"])
def limiter(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Limiter]:
    if request.param == "memory":
        yield Limiter("memory://")
    else:
        with redis_server(tmp_path) as (url, _):
            yield Limiter(url)


def test_take_counts_each_request_once_and_refuses_past_the_limit(limiter: Limiter) -> None:
    started = time.time()
    taken = [limiter.take(POLICY, "account-a") for _ in range(4)]
    assert all(a is not None for a in taken)
    assert [(a.allowed, a.remaining) for a in taken if a] == [(True, 2), (True, 1), (True, 0), (False, 0)]
    # The window opens again when the first request counted leaves it, 60 s after it.
    assert all(a and started + 60 <= a.reset_at <= time.time() + 60 for a in taken)
    peeked = limiter.peek(POLICY, "account-a")
    assert peeked is not None and peeked.remaining == 0  # the refused request counted nothing


def test_a_cost_counts_as_that_many_requests_all_or_none_and_is_given_back_whole(limiter: Limiter) -> None:
    two = limiter.take(POLICY, "account-c", cost=2)
    assert two is not None and (two.allowed, two.remaining) == (True, 1)
    refused = limiter.take(POLICY, "account-c", cost=2)  # no room for both: neither is counted
    assert refused is not None and (refused.allowed, refused.remaining) == (False, 1)
    limiter.give_back(POLICY, "account-c", cost=2)
    left = limiter.peek(POLICY, "account-c")
    assert left is not None and left.remaining == 3
    assert limiter.take(POLICY, "account-c", cost=4) is not None  # past the whole limit
    assert limiter.peek(POLICY, "account-c").remaining == 3  # type: ignore[union-attr]


def test_keys_and_policies_count_apart(limiter: Limiter) -> None:
    limiter.take(POLICY, "account-a")
    other = limiter.take(POLICY, "account-b")
    folders = limiter.take(Policy.parse("folders", "3/minute"), "account-a")
    assert other is not None and other.remaining == 2
    assert folders is not None and folders.remaining == 2


def test_give_back_uncounts_one_request_and_no_more(limiter: Limiter) -> None:
    for _ in range(3):
        limiter.take(POLICY, "account-a")
    limiter.give_back(POLICY, "account-a")
    peeked = limiter.peek(POLICY, "account-a")
    assert peeked is not None and peeked.remaining == 1
    for _ in range(3):
        limiter.give_back(POLICY, "account-a")  # more than were counted: the window is empty
    limiter.give_back(POLICY, "account-b")  # never counted
    taken = [limiter.take(POLICY, "account-a") for _ in range(4)]
    assert [a and a.allowed for a in taken] == [True, True, True, False]


def test_a_redis_that_lost_the_scripts_still_counts_each_request_once(
    own_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, _ = own_redis
    limiter = Limiter(url)
    first = limiter.take(POLICY, "account-a")
    redis.Redis.from_url(url).script_flush()  # as after a Redis restart
    second = limiter.take(POLICY, "account-a")
    third = limiter.take(POLICY, "account-a")
    assert [a and a.remaining for a in (first, second, third)] == [2, 1, 0]


def test_with_redis_stopped_an_ordinary_policy_fails_open_and_a_strict_one_counts_in_memory(
    own_redis: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, process = own_redis
    limiter = Limiter(url)
    assert limiter.take(POLICY, "k") is not None  # counted in Redis
    process.kill()
    process.wait()
    assert limiter.take(POLICY, "k") is None  # ordinary: goes ahead uncounted
    strict = [limiter.take(POLICY, "guesser", fail_open=False) for _ in range(POLICY.limit + 1)]
    assert [a is not None and a.allowed for a in strict] == [True] * POLICY.limit + [False]
    assert limiter.peek(POLICY, "guesser", fail_open=False).remaining == 0  # type: ignore[union-attr]
