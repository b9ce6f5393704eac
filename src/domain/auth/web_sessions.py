"""Browser sessions of the sign-in, consent and card pages: a random cookie value, kept by its
hash, that names the signed-in account until it ends or the browser signs out; and one-time
sign-in links, which start one."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cardvault.domain.auth import credentials
from cardvault.domain.models import SignInLink, WebSession

SESSION_SECONDS = 7 * 86_400  # a week, then sign in again
LINK_SECONDS = 15 * 60  # a sign-in link is good this long, and once


def _issue(
    session: Session, row: type[WebSession | SignInLink], kind: str, account_id: str, now: int, seconds: int
) -> str:
    """A new secret of the kind, kept by its hash in a row of the account that ends ``seconds`` on."""
    token = credentials.new_secret(kind)
    session.add(
        row(
            token_hash=credentials.digest(token),
            account_id=account_id,
            created_at=now,
            expires_at=now + seconds * 1000,
        )
    )
    return token


def start_session(session: Session, *, account_id: str, now: int) -> str:
    """Start a signed-in session for the account; return the cookie value."""
    return _issue(session, WebSession, credentials.SESSION, account_id, now, SESSION_SECONDS)


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
    """Delete ended sessions and sign-in links."""
    session.execute(delete(WebSession).where(WebSession.expires_at <= now))
    session.execute(delete(SignInLink).where(SignInLink.expires_at <= now))


def issue_sign_in_link(session: Session, *, account_id: str, now: int) -> str:
    """A token that signs a browser in as the account once, within LINK_SECONDS."""
    return _issue(session, SignInLink, credentials.SIGN_IN_LINK, account_id, now, LINK_SECONDS)


def sign_in_with_link(session: Session, *, token: str, now: int) -> str | None:
    """Spend a sign-in link: start a session for its account and return the cookie value; None
    when the token is no live link (made up, used already, or expired). Deleting the row is
    what spends it, so two browsers racing with one link start one session."""
    if not credentials.is_well_formed(token, credentials.SIGN_IN_LINK):
        return None
    account_id = session.scalar(
        delete(SignInLink)
        .where(SignInLink.token_hash == credentials.digest(token), SignInLink.expires_at > now)
        .returning(SignInLink.account_id)
    )
    return None if account_id is None else start_session(session, account_id=account_id, now=now)
