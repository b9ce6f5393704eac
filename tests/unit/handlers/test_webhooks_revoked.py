"""Webhooks end with the credential that made them (issue 42, low: "webhooks outlive the
credential"), over HTTP with the embedded worker sending to a loopback receiver: an endpoint
made with an API key is disabled (REVOKED) when that key is revoked (revokeApiKey), one made by
an app's access token when its grant is revoked (/oauth/revoke, or every grant of the account
at a password change); an endpoint of another credential stays enabled, and nothing changed
after the revocation is sent to the revoked one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import Database
from cardvault.domain.models import Account
from cardvault.settings import Settings
from harness.servers import PageServer, page_server
from tests.conftest import Api, app_env
from tests.unit.handlers.test_webhooks import OK, deliveries, received
from tests.unit.handlers.web import conftest as pages
from tests.unit.handlers.web.conftest import Client, Person
from tests.unit.handlers.web.test_authorize import _tokens

PATHS = ("/key", "/other", "/app")
# The pages' browser, person and app (their fixtures, over this module's settings).
browser, make_person, person, oauth_client = (
    pages.browser,
    pages.make_person,
    pages.person,
    pages.oauth_client,
)


@pytest.fixture
def receiver() -> Iterator[PageServer]:
    with page_server() as server:
        for path in PATHS:
            server.routes[path] = OK
        yield server


@pytest.fixture
def settings(tmp_path: Path, database: Database, receiver: PageServer) -> Settings:
    return Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(receiver.port),
            "CARDVAULT_WEBHOOK_SCHEDULE": "0,0.1,0.1,0.1",
            "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS": "1",
        }
    )


@pytest.fixture
def owner(browser: TestClient, database: Database, person: Person) -> Api:
    """The person's own API key: the credential that stays."""
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=person.account_id, name="own")
    return Api(browser, key, person.account_id)


def _hook(api: Api, receiver: PageServer, path: str) -> str:
    answer = api.post("/v1/webhooks", json={"url": receiver.url(path), "events": ["card.created"]})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["webhook"]["id"])


def _shown(api: Api, webhook_id: str) -> dict[str, Any]:
    answer = api.get(f"/v1/webhooks/{webhook_id}")
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def _told_after_revocation(
    owner: Api, receiver: PageServer, kept: str, revoked: str, revoked_path: str
) -> None:
    """A card made after the revocation reaches the endpoint that stayed, and never the revoked
    one: it gets no delivery of it (the dispatch that made the kept one's made none for it)."""
    before = len([at for at, _, _ in list(receiver.received) if at == revoked_path])
    card = owner.create(content="after the revocation")
    deadline = time.monotonic() + 20
    while card["id"] not in {d["payload"]["data"]["id"] for d in deliveries(owner, kept)}:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    received(receiver, 1, "/other")
    assert all(d["payload"]["data"]["id"] != card["id"] for d in deliveries(owner, revoked))
    time.sleep(0.3)  # and nothing is sent to it a moment later either
    assert len([at for at, _, _ in list(receiver.received) if at == revoked_path]) == before


def test_revoking_an_api_key_disables_the_webhooks_it_made_and_no_other(
    owner: Api, receiver: PageServer
) -> None:
    made = owner.post("/v1/api-keys", json={"name": "integration", "scopes": ["read", "write"]}).json()
    integration = Api(owner.client, made["key"], owner.account_id)
    theirs, mine = _hook(integration, receiver, "/key"), _hook(owner, receiver, "/other")
    owner.create(content="before the revocation")
    received(receiver, 1, "/key")
    assert owner.request("DELETE", f"/v1/api-keys/{made['apiKey']['id']}").status_code == 204
    shown = _shown(owner, theirs)
    assert (shown["enabled"], shown["disabledReason"]) == (False, "REVOKED") and shown["disabledAt"]
    assert (_shown(owner, mine)["enabled"], _shown(owner, mine)["disabledReason"]) == (True, None)
    _told_after_revocation(owner, receiver, mine, theirs, "/key")
    # Enabled again by the owner's key, it is the owner's: told again, as before.
    assert owner.patch(f"/v1/webhooks/{theirs}", json={"enabled": True}).json()["enabled"] is True
    owner.create(content="after it was enabled again")
    assert len(received(receiver, 2, "/key")) == 2


def test_revoking_an_apps_grant_disables_the_webhooks_its_tokens_made(
    browser: TestClient, owner: Api, person: Person, oauth_client: Client, receiver: PageServer
) -> None:
    tokens = _tokens(browser, person, oauth_client)
    app = Api(browser, tokens["access_token"], person.account_id)
    theirs, mine = _hook(app, receiver, "/app"), _hook(owner, receiver, "/other")
    revoked = browser.post(
        "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": oauth_client.client_id}
    )
    assert revoked.status_code == 200, revoked.text
    assert (_shown(owner, theirs)["enabled"], _shown(owner, theirs)["disabledReason"]) == (False, "REVOKED")
    assert _shown(owner, mine)["enabled"] is True
    _told_after_revocation(owner, receiver, mine, theirs, "/app")
    assert received(receiver, 0, "/app") == []


def test_a_new_password_disables_the_webhooks_of_every_app_of_the_account(
    browser: TestClient,
    owner: Api,
    person: Person,
    oauth_client: Client,
    receiver: PageServer,
    database: Database,
) -> None:
    tokens = _tokens(browser, person, oauth_client)
    theirs = _hook(Api(browser, tokens["access_token"], person.account_id), receiver, "/app")
    mine = _hook(owner, receiver, "/other")
    with database.transaction() as session:  # as `cardvault account password` does
        account = session.get(Account, person.account_id)
        assert account is not None
        accounts.set_password(session, account=account, password_hash=account.password_hash or "")
    assert (_shown(owner, theirs)["enabled"], _shown(owner, theirs)["disabledReason"]) == (False, "REVOKED")
    assert _shown(owner, mine)["enabled"] is True  # the person's own key is no app's
    _told_after_revocation(owner, receiver, mine, theirs, "/app")
