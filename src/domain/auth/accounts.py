"""Accounts: their names, emails and passwords."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cardvault.domain.auth import oauth, passwords, web_sessions
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import Conflict, InvalidInput, NotFound
from cardvault.domain.ids import new_id
from cardvault.domain.models import Account
from cardvault.domain.names import tag_key

# An address as people type it: something@domain.tld, no spaces (the sign-in page checks no more).
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+")


def email_key(email: str) -> str:
    """The form an email is compared in: unique ignoring case."""
    return email.strip().lower()


def check_password_rules(password: str) -> None:
    """Refuse a password too short or too long to be a good one."""
    if not passwords.MIN_LENGTH <= len(password) <= passwords.MAX_LENGTH:
        raise InvalidInput(f"A password is {passwords.MIN_LENGTH} to {passwords.MAX_LENGTH} characters.")


def create_account(
    session: Session, *, name: str, email: str | None = None, password_hash: str | None = None
) -> Account:
    """Create an account with a unique name (compared ignoring case) and, to sign in with, a
    unique email and a password's hash."""
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise InvalidInput("An account name is 1 to 200 characters.")
    if email is not None and (len(email.strip()) > 254 or _EMAIL.fullmatch(email.strip()) is None):
        raise InvalidInput(f"{email!r} is not an email address.")
    account = Account(
        id=new_id("acc"),
        name=name,
        name_key=tag_key(name),
        created_at=now_ms(),
        email=email.strip() if email else None,
        email_key=email_key(email) if email else None,
        password_hash=password_hash,
    )
    try:
        with session.begin_nested():
            session.add(account)
    except IntegrityError:
        raise Conflict(f"An account named {name!r} or with the email {email!r} exists.") from None
    return account


def account_by_email(session: Session, *, email: str) -> Account | None:
    """The account that signs in with this email, or None."""
    if "\x00" in email:  # PostgreSQL refuses NUL in text; no address holds one
        return None
    return session.scalar(select(Account).where(Account.email_key == email_key(email)))


def find_account(session: Session, *, name_or_id: str) -> Account:
    """Return the account with this id or name."""
    account = session.scalar(
        select(Account).where((Account.id == name_or_id) | (Account.name_key == tag_key(name_or_id.strip())))
    )
    if account is None:
        raise NotFound(f"No account is named {name_or_id!r}.")
    return account


def set_password(session: Session, *, account: Account, password_hash: str) -> None:
    """Give the account a new password; every browser session and app grant of it ends (RFC
    9700 §4.14.2: a security event revokes refresh tokens)."""
    account.password_hash = password_hash
    now = now_ms()
    oauth.revoke_account_grants(session, account_id=account.id, now=now)
    web_sessions.end_account_sessions(session, account_id=account.id)
