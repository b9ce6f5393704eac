"""Browser sessions of the sign-in, consent and card pages: a random cookie value, kept by its
hash, that names the signed-in account until it ends or the browser signs out."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cardvault.domain.auth import credentials
from cardvault.domain.models import WebSession

SESSION_SECONDS = 7 * 86_400  # a week, then sign in again


def start_session(session: Session, *, account_id: str, now: int) -> str:
    """Start a signed-in session for the account; return the cookie value."""
    token = credentials.new_secret(credentials.SESSION)
    session.add(
        WebSession(
            token_hash=credentials.digest(token),
            account_id=account_id,
            created_at=now,
            expires_at=now + SESSION_SECONDS * 1000,
        )
    )
    return token


def session_account(session: Session, *, token: str, now: int) -> str | None:
    """The account a live session cookie is signed in as, or None."""
    if not credentials.is_well_formed(token, credentials.SESSION):
        return None
    return session.scalar(
        select(WebSession.account_id).where(
            WebSession.token_hash == credentials.digest(token), WebSession.expires_at > now
        )
    )


def end_session(session: Session, *, token: str) -> None:
    """Sign the session out."""
    session.execute(delete(WebSession).where(WebSession.token_hash == credentials.digest(token)))


def end_account_sessions(session: Session, *, account_id: str) -> None:
    """Sign every browser of the account out (its password changed)."""
    session.execute(delete(WebSession).where(WebSession.account_id == account_id))


def forget_expired(session: Session, *, now: int) -> None:
    """Delete ended sessions."""
    session.execute(delete(WebSession).where(WebSession.expires_at <= now))
