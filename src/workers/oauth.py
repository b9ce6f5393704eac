"""The periodic deletion of ended sign-in records: authorization codes, OAuth tokens and grants,
and browser sessions."""

from __future__ import annotations

from cardvault.domain.auth import oauth, web_sessions
from cardvault.domain.clock import now_ms
from cardvault.services import Services
from cardvault.workers.broker import actor


@actor(actor_name="forget_ended_credentials", queue_name="housekeeping", max_retries=3, time_limit=300_000)
def forget_ended_credentials(services: Services) -> None:
    """Delete codes, tokens, grants and sessions that can no longer be used."""
    with services.database.transaction() as session:
        now = now_ms()
        oauth.forget_expired(session, now=now)
        web_sessions.forget_expired(session, now=now)
