"""Browser sessions: a cookie names its account until it ends (a week on), is signed out, or its
account signs every browser out; only its hash is kept."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select

from cardvault.domain.auth import credentials, web_sessions
from cardvault.domain.db import Database
from cardvault.domain.models import SignInLink, WebSession

NOW = 1_764_000_000_000
WEEK = web_sessions.SESSION_SECONDS * 1000


def _start(database: Database, account_id: str, now: int = NOW) -> str:
    with database.transaction() as session:
        return web_sessions.start_session(session, account_id=account_id, now=now)


def _account(database: Database, token: str, now: int = NOW) -> str | None:
    with database.transaction(write=False) as session:
        return web_sessions.session_account(session, token=token, now=now)


def test_a_session_names_its_account_until_a_week_has_passed(database: Database, account_id: str) -> None:
    token = _start(database, account_id)
    assert credentials.is_well_formed(token, credentials.SESSION)
    assert _account(database, token) == account_id
    assert _account(database, token, NOW + WEEK - 1) == account_id
    assert _account(database, token, NOW + WEEK) is None


def test_only_the_hash_of_the_cookie_is_kept(database: Database, account_id: str) -> None:
    token = _start(database, account_id)
    with database.transaction(write=False) as session:
        kept = session.scalars(select(WebSession.token_hash).where(WebSession.account_id == account_id)).all()
    assert kept == [credentials.digest(token)]


@pytest.mark.parametrize("token", ["", "cvs_nope", "cvk_" + "a" * 36])
def test_a_made_up_cookie_names_no_account(database: Database, token: str) -> None:
    assert _account(database, token) is None


def test_a_well_formed_cookie_that_was_never_issued_names_no_account(database: Database) -> None:
    assert _account(database, credentials.new_secret(credentials.SESSION)) is None


def test_signing_out_ends_that_session_alone(database: Database, account_id: str) -> None:
    ended, kept = _start(database, account_id), _start(database, account_id)
    with database.transaction() as session:
        web_sessions.end_session(session, token=ended)
    assert (_account(database, ended), _account(database, kept)) == (None, account_id)


def test_ending_an_accounts_sessions_leaves_other_accounts_signed_in(
    database: Database, new_account: Callable[[], str]
) -> None:
    mine, other = new_account(), new_account()
    tokens = [_start(database, mine), _start(database, mine)]
    others = _start(database, other)
    with database.transaction() as session:
        web_sessions.end_account_sessions(session, account_id=mine)
    assert [_account(database, t) for t in tokens] == [None, None]
    assert _account(database, others) == other


def test_forgetting_ended_sessions_keeps_live_ones(database: Database, account_id: str) -> None:
    old, live = _start(database, account_id, NOW - WEEK), _start(database, account_id, NOW)
    with database.transaction() as session:
        web_sessions.forget_expired(session, now=NOW)
    with database.transaction(write=False) as session:
        kept = session.scalars(select(WebSession.token_hash).where(WebSession.account_id == account_id)).all()
    assert kept == [credentials.digest(live)] and credentials.digest(old) not in kept


def _spend(database: Database, token: str, now: int = NOW) -> str | None:
    with database.transaction() as session:
        return web_sessions.sign_in_with_link(session, token=token, now=now)


def test_a_sign_in_link_starts_one_session_once_within_its_time(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        link = web_sessions.issue_sign_in_link(session, account_id=account_id, now=NOW)
        late = web_sessions.issue_sign_in_link(session, account_id=account_id, now=NOW)
    assert link.startswith(credentials.SIGN_IN_LINK) and credentials.is_well_formed(
        link, credentials.SIGN_IN_LINK
    )
    started = _spend(database, link, NOW + 60_000)
    assert started is not None and _account(database, started, NOW + 60_000) == account_id
    assert _spend(database, link, NOW + 61_000) is None  # once
    assert _spend(database, late, NOW + web_sessions.LINK_SECONDS * 1000) is None  # expired
    assert _spend(database, link.replace(link[5], "0" if link[5] != "0" else "1")) is None  # made up
    assert _spend(database, started) is None  # a session cookie is no link


def test_expired_links_are_forgotten_with_expired_sessions(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        kept = web_sessions.issue_sign_in_link(session, account_id=account_id, now=NOW)
        web_sessions.issue_sign_in_link(session, account_id=account_id, now=NOW - 20 * 60_000)
    with database.transaction() as session:
        web_sessions.forget_expired(session, now=NOW)
    with database.transaction(write=False) as session:
        left = session.scalars(select(SignInLink.token_hash).where(SignInLink.account_id == account_id)).all()
    assert left == [credentials.digest(kept)]
