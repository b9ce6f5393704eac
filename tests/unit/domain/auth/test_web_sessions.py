"""Browser sessions: a cookie names its account until it ends (a week on), is signed out, or its
account signs every browser out; only its hash is kept."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select

from cardvault.domain.auth import credentials, web_sessions
from cardvault.domain.db import Database
from cardvault.domain.models import WebSession

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
