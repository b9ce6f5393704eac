"""The process's runtime: the credential cache (what it keeps, for how long, what it forgets)."""

from __future__ import annotations

import time

from cardvault.handlers.http.runtime import CACHE_SECONDS, CredentialCache, Holder

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
