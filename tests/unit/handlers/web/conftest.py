"""Fixtures of the pages' tests: a browser-like client (HTTPS, cookies kept, redirects not
followed), an account that signs in, and a registered OAuth client."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
import secrets
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, oauth
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.handlers.http.runtime import passwords_from_settings
from cardvault.settings import Settings

PUBLIC_URL = "https://app.cardvault.test"
PASSWORD = "correct horse battery staple"
REDIRECT_URI = "https://client.example/callback"


@pytest.fixture
def browser(settings: Settings, database: Database) -> Iterator[TestClient]:
    """A client that behaves like a browser on the public URL: keeps cookies, sees redirects."""
    with TestClient(
        create_app(settings, database),
        base_url=PUBLIC_URL,
        follow_redirects=False,
        raise_server_exceptions=False,
    ) as client:
        yield client


@dataclasses.dataclass(frozen=True)
class Person:
    account_id: str
    name: str
    email: str
    password: str


@pytest.fixture
def make_person(settings: Settings, database: Database):  # type: ignore[no-untyped-def]
    hasher = passwords_from_settings(settings)

    def make() -> Person:
        name = f"person-{secrets.token_hex(6)}"
        email = f"{name}@example.com"
        with database.transaction() as session:
            account = accounts.create_account(
                session, name=name, email=email, password_hash=hasher.hash(PASSWORD)
            )
        return Person(account.id, name, email, PASSWORD)

    return make


@pytest.fixture
def person(make_person) -> Person:  # type: ignore[no-untyped-def]
    return make_person()  # type: ignore[no-any-return]


@dataclasses.dataclass(frozen=True)
class Client:
    client_id: str
    secret: str | None
    redirect_uri: str


@pytest.fixture
def oauth_client(database: Database) -> Client:
    """A public client (PKCE, no secret) allowed every scope."""
    with database.transaction() as session:
        client, secret = oauth.create_client(
            session, name="Example App", redirect_uris=[REDIRECT_URI], scopes="read write keys", now=now_ms()
        )
    return Client(client.id, secret, REDIRECT_URI)


def pkce() -> tuple[str, str]:
    """A code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert found, html
    return found.group(1)


def sign_in(browser: TestClient, person: Person, next_path: str = "") -> None:
    page = browser.get("/sign-in")
    response = browser.post(
        "/sign-in",
        data={
            "csrf": csrf_of(page.text),
            "email": person.email,
            "password": person.password,
            "next": next_path,
        },
    )
    assert response.status_code == 303, response.text


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
