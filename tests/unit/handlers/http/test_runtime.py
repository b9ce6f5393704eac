"""The process's runtime: the credential cache (what it keeps, for how long, what it forgets), and
the admission of work that waits for a slot on the event loop, never in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import anyio

from cardvault.domain.errors import ServiceBusy
from cardvault.handlers.http.runtime import CACHE_SECONDS, Admission, CredentialCache, Holder

KEY = Holder("acc_1", ("read",))
TOKEN = Holder("acc_1", ("read", "write"), grant_id="grt_1")


class TestCredentialCache:
    def test_a_holder_is_kept_until_its_credential_ends_or_the_cache_time(self) -> None:
        cache = CredentialCache()
        cache.put("key", KEY)
        cache.put("ending", TOKEN, ends_at=time.time() - 1)
        assert cache.get("key") == KEY
        assert cache.get("ending") is None
        assert cache.get("unknown") is None
        assert CACHE_SECONDS <= 5

    def test_forget_drops_one_credential_of_either_kind(self) -> None:
        cache = CredentialCache()
        cache.put("key", KEY)
        cache.put("token", TOKEN)
        cache.forget("key")
        cache.forget("token")
        assert (cache.get("key"), cache.get("token")) == (None, None)

    def test_forget_granted_drops_every_credential_of_a_grant_and_keeps_the_rest(self) -> None:
        cache = CredentialCache()
        for n in range(1_000):
            cache.put(f"token-{n}", TOKEN)
            cache.put(f"key-{n}", KEY)
        cache.forget_granted()
        assert all(cache.get(f"token-{n}") is None for n in range(1_000))
        assert all(cache.get(f"key-{n}") == KEY for n in range(1_000))
        cache.put("token-0", TOKEN)  # what is verified again is kept again
        assert cache.get("token-0") == TOKEN


class TestAdmission:
    def test_past_the_slots_and_the_queue_a_call_is_refused_at_once(self) -> None:
        async def main() -> list[object]:
            admission = Admission(slots=1, waiting=1)
            release = threading.Event()
            answers: list[object] = []

            async def call() -> None:
                try:
                    answers.append(await admission.run(release.wait))
                except ServiceBusy:
                    answers.append("busy")

            async def until(condition: Callable[[], bool]) -> None:
                with anyio.fail_after(10):
                    while not condition():
                        await anyio.sleep(0.001)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await until(lambda: admission.running == 1)
                group.start_soon(call)
                await until(lambda: admission.queued == 1)
                await call()  # the slot held and the queue full: refused, no thread taken
                assert answers == ["busy"] and admission.running == 1
                release.set()
            return answers

        assert anyio.run(main) == ["busy", True, True]
