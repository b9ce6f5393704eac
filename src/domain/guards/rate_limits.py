"""The rate limits an account's requests are held to: ``spend`` counts a request against a
policy, or refuses it with the time it would be accepted."""

from __future__ import annotations

import math

from cardvault.adapters.limiter import Allowance, Limiter, Policy
from cardvault.domain.errors import RateLimited


def spend(
    limiter: Limiter, policy: Policy, *, account_id: str, fail_open: bool = True, cost: int = 1
) -> Allowance | None:
    """Count one request of the account against the policy (``cost``: as that many requests, a
    bulk request's items), or raise RateLimited (counting nothing) when the policy's window has
    no room for it. None: the limiter could not be reached, and the request goes ahead
    uncounted; ``fail_open=False`` counts it in this process instead."""
    allowance = limiter.take(policy, account_id, fail_open=fail_open, cost=cost)
    if allowance is not None and not allowance.allowed:
        raise RateLimited(
            policy.name,
            limit=policy.limit,
            window_seconds=policy.window_seconds,
            retry_at=math.ceil(allowance.reset_at * 1000),
        )
    return allowance


def ensure_room(limiter: Limiter, policy: Policy, *, account_id: str) -> None:
    """Raise RateLimited when the policy's window is full for this key, counting nothing (a
    request held to two policies looks at the second before the first counts it)."""
    allowance = limiter.peek(policy, account_id)
    if allowance is not None and allowance.remaining <= 0:
        raise RateLimited(
            policy.name,
            limit=policy.limit,
            window_seconds=policy.window_seconds,
            retry_at=math.ceil(allowance.reset_at * 1000),
        )
