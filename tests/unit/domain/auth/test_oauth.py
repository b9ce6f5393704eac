"""OAuth records: redirect URI rules, codes and refresh tokens spent once, families revoked,
a password change ending every grant and session, and the cleanup of what has ended."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from cardvault.domain.auth import accounts, credentials, oauth, web_sessions
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidInput
from cardvault.domain.models import Account, OAuthCode, OAuthGrant, OAuthToken


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example/cb",
        "https://app.example:8443/cb?x=1",
        "http://127.0.0.1:8765/cb",
        "http://[::1]/cb",
        "http://localhost/cb",
        "com.example.notes:/callback",
    ],
)
def test_these_redirect_uris_can_be_registered(uri: str) -> None:
    oauth.check_redirect_uri(uri)


@pytest.mark.parametrize(
    "uri",
    [
        "http://app.example/cb",
        "https://app.example/cb#frag",
        "/relative/cb",
        "javascript:alert(1)",
        "data:text/html,x",
        "https:///nohost",
        "myapp:/cb",  # a private scheme must be reverse-domain (RFC 8252 §7.1)
        "https://" + "a" * 2000 + ".example/",
    ],
)
def test_these_redirect_uris_are_refused(uri: str) -> None:
    with pytest.raises(InvalidInput):
        oauth.check_redirect_uri(uri)


def _grant(database: Database, account_id: str) -> tuple[str, str, str]:
    """A client, and a grant of it with a first refresh token: (client id, grant id, token)."""
    now = now_ms()
    with database.transaction() as session:
        client, _ = oauth.create_client(session, name="App", redirect_uris=["https://a.example/cb"], now=now)
        grant = oauth.start_grant(
            session, account_id=account_id, client_id=client.id, scopes="read write", now=now
        )
        refresh = credentials.new_secret(credentials.REFRESH_TOKEN)
        oauth.add_tokens(
            session,
            grant=grant,
            access_token=credentials.new_secret(credentials.ACCESS_TOKEN),
            refresh_token=refresh,
            access_scopes="read write",
            now=now,
        )
        return client.id, grant.id, refresh


def test_a_refresh_token_is_spent_once_and_a_second_use_revokes_its_grant(
    database: Database, account_id: str
) -> None:
    client_id, grant_id, refresh = _grant(database, account_id)
    with database.transaction() as session:
        assert (
            oauth.spend_refresh_token(session, token=refresh, client_id=client_id, now=now_ms()) is not None
        )
    with database.transaction() as session:
        assert oauth.spend_refresh_token(session, token=refresh, client_id=client_id, now=now_ms()) is None
    with database.transaction(write=False) as session:
        assert session.get(OAuthGrant, grant_id).revoked_at is not None  # type: ignore[union-attr]


def test_another_clients_refresh_token_is_refused_without_revoking(
    database: Database, account_id: str
) -> None:
    client_id, _, refresh = _grant(database, account_id)
    other_client, _, _ = _grant(database, account_id)
    with database.transaction() as session:
        assert oauth.spend_refresh_token(session, token=refresh, client_id=other_client, now=now_ms()) is None
    with database.transaction() as session:
        assert (
            oauth.spend_refresh_token(session, token=refresh, client_id=client_id, now=now_ms()) is not None
        )


def test_a_family_ends_ninety_days_after_sign_in_however_often_it_refreshes(
    database: Database, account_id: str
) -> None:
    _, grant_id, _ = _grant(database, account_id)
    with database.transaction() as session:
        grant = session.get(OAuthGrant, grant_id)
        assert grant is not None
        late = grant.created_at + oauth.REFRESH_ABSOLUTE_MS - 1000
        token = credentials.new_secret(credentials.REFRESH_TOKEN)
        oauth.add_tokens(
            session,
            grant=grant,
            access_token=credentials.new_secret(credentials.ACCESS_TOKEN),
            refresh_token=token,
            access_scopes="read",
            now=late,
        )
    with database.transaction(write=False) as session:
        row = session.get(OAuthToken, credentials.digest(token))
        assert row is not None and row.expires_at == grant.created_at + oauth.REFRESH_ABSOLUTE_MS


def test_changing_the_password_ends_every_grant_and_browser_session(
    database: Database, account_id: str
) -> None:
    _, grant_id, _ = _grant(database, account_id)
    with database.transaction() as session:
        cookie = web_sessions.start_session(session, account_id=account_id, now=now_ms())
    with database.transaction() as session:
        account = session.get(Account, account_id)
        assert account is not None
        accounts.set_password(session, account=account, password_hash="$argon2id$new")
    with database.transaction(write=False) as session:
        assert session.get(OAuthGrant, grant_id).revoked_at is not None  # type: ignore[union-attr]
        assert web_sessions.session_account(session, token=cookie, now=now_ms()) is None


def test_a_password_change_spends_the_codes_not_yet_exchanged(database: Database, account_id: str) -> None:
    client_id, _, _ = _grant(database, account_id)
    code = credentials.new_secret(credentials.AUTHORIZATION_CODE)
    with database.transaction() as session:
        oauth.save_code(
            session,
            code=code,
            client_id=client_id,
            account_id=account_id,
            redirect_uri="https://a.example/cb",
            scopes="read",
            code_challenge="x" * 43,
            now=now_ms(),
        )
    with database.transaction() as session:
        account = session.get(Account, account_id)
        assert account is not None
        accounts.set_password(session, account=account, password_hash="$argon2id$new")
    with database.transaction() as session:  # within its 120 s, and never used: still refused
        assert oauth.spend_code(session, code=code, client_id=client_id, now=now_ms()) is None


def test_ended_codes_tokens_and_grants_are_forgotten(database: Database, account_id: str) -> None:
    client_id, grant_id, _ = _grant(database, account_id)
    now = now_ms()
    with database.transaction() as session:
        oauth.save_code(
            session,
            code=credentials.new_secret(credentials.AUTHORIZATION_CODE),
            client_id=client_id,
            account_id=account_id,
            redirect_uri="https://a.example/cb",
            scopes="read",
            code_challenge="x" * 43,
            now=now,
        )
        oauth.revoke_grant(session, grant_id=grant_id, now=now)
    later = now + oauth.REFRESH_IDLE_MS + 2 * 86_400_000
    with database.transaction() as session:
        oauth.forget_expired(session, now=later)
        web_sessions.forget_expired(session, now=later)
    with database.transaction(write=False) as session:
        assert session.get(OAuthGrant, grant_id) is None
        assert (
            session.scalar(
                select(func.count()).select_from(OAuthToken).where(OAuthToken.grant_id == grant_id)
            )
            == 0
        )
        assert (
            session.scalar(
                select(func.count()).select_from(OAuthCode).where(OAuthCode.client_id == client_id)
            )
            == 0
        )


def test_an_email_is_unique_ignoring_case(database: Database) -> None:
    from cardvault.domain.errors import Conflict

    with database.transaction() as session:
        accounts.create_account(session, name=f"a-{now_ms()}", email=f"Same{now_ms()}@Example.com")
        email = session.scalars(select(Account.email).order_by(Account.created_at.desc())).first()
    with pytest.raises(Conflict), database.transaction() as session:
        accounts.create_account(session, name=f"b-{now_ms()}", email=str(email).upper())


@pytest.mark.parametrize(
    "email", ["no-at-sign", "a@b", "a b@c.example", "@c.example", "a@@c.example", "x" * 250 + "@c.de"]
)
def test_an_address_that_is_not_an_email_is_refused(database: Database, email: str) -> None:
    with pytest.raises(InvalidInput), database.transaction() as session:
        accounts.create_account(session, name=f"c-{now_ms()}", email=email)
