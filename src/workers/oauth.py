"""The periodic deletion of ended sign-in records: authorization codes, OAuth tokens and grants,
and browser sessions."""

from __future__ import annotations

import dramatiq

from cardvault.domain.auth import oauth, web_sessions
from cardvault.domain.clock import now_ms
from cardvault.workers.broker import database


@dramatiq.actor(
    actor_name="forget_ended_credentials", queue_name="housekeeping", max_retries=3, time_limit=300_000
)
def forget_ended_credentials() -> None:
    """Delete codes, tokens, grants and sessions that can no longer be used."""
    with database().transaction() as session:
        now = now_ms()
        oauth.forget_expired(session, now=now)
        web_sessions.forget_expired(session, now=now)
