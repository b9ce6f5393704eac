"""Webhook endpoints (cardvault.domain.webhooks.endpoints): the URL rules against SSRF vectors,
event lists, secrets in Standard Webhooks' form, and the count of enabled endpoints the changes
recorder reads to announce changes."""

from __future__ import annotations

import base64

import pytest
from sqlalchemy import select

from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidInput
from cardvault.domain.models import ChangeCounter
from cardvault.domain.webhooks import endpoints

PORTS = (443,)


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/hook",
        "https://127.0.0.1/hook",
        "https://[::1]/hook",
        "https://0.0.0.0/hook",
        "https://10.1.2.3/hook",
        "https://192.168.0.1/hook",
        "https://100.64.0.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::ffff:10.0.0.1]/hook",
        "https://[64:ff9b::a00:1]/hook",
        "https://[2002:a00:1::1]/hook",
        "https://[fe80::1]/hook",
        "https://[fc00::1]/hook",
        "https://224.0.0.1/hook",
        "http://example.com/hook",
        "https://example.com:80/hook",
        "https://user@example.com/hook",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://[::1/hook",
        "//example.com/hook",
    ],
)
def test_urls_that_could_reach_inside_are_refused(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        endpoints.check_url(url, ports=PORTS, allow_loopback=False)
    assert refused.value.details is not None
    assert [field["field"] for field in refused.value.details["fields"]] == ["url"]


@pytest.mark.parametrize(
    "url", ["https://hooks.example.com/cardvault", "https://8.8.8.8/x", "https://[2001:4860::8888]/x"]
)
def test_public_https_urls_are_taken(url: str) -> None:
    assert endpoints.check_url(url, ports=PORTS, allow_loopback=False) == url


def test_the_loopback_test_mode_takes_plain_http_to_this_machine_only() -> None:
    assert endpoints.check_url("http://localhost:443/h", ports=PORTS, allow_loopback=True)
    assert endpoints.check_url("http://127.0.0.1:443/h", ports=PORTS, allow_loopback=True)
    with pytest.raises(InvalidInput):
        endpoints.check_url("http://example.com:443/h", ports=PORTS, allow_loopback=True)


def test_events_are_known_types_each_once_or_all() -> None:
    assert endpoints.check_events(["card.created", "card.created", "tag.deleted"]) == [
        "card.created",
        "tag.deleted",
    ]
    assert endpoints.check_events(["*"]) == ["*"]
    for bad in (["*", "card.created"], ["card.eaten"]):
        with pytest.raises(InvalidInput):
            endpoints.check_events(bad)


def test_a_secret_is_whsec_and_32_random_bytes() -> None:
    made = {endpoints.new_secret() for _ in range(50)}
    assert len(made) == 50
    assert all(len(base64.b64decode(s.removeprefix("whsec_"))) == 32 for s in made)


def test_the_count_of_enabled_endpoints_follows_create_disable_enable_and_delete(
    database: Database, account_id: str
) -> None:
    def count() -> int:
        with database.transaction(write=False) as session:
            return (
                session.scalar(select(ChangeCounter.webhooks).where(ChangeCounter.account_id == account_id))
                or 0
            )

    with database.transaction() as session:
        first, _ = endpoints.create(
            session, account_id=account_id, url="https://a.example/", events=["*"], description=""
        )
        second, _ = endpoints.create(
            session, account_id=account_id, url="https://b.example/", events=["*"], description=""
        )
    assert count() == 2
    with database.transaction() as session:
        endpoints.update(session, account_id=account_id, webhook_id=first.id, enabled=False)
        endpoints.update(
            session, account_id=account_id, webhook_id=first.id, enabled=False
        )  # again: no change
    assert count() == 1
    with database.transaction() as session:
        endpoints.delete(session, account_id=account_id, webhook_id=first.id)  # disabled: not counted
        endpoints.update(session, account_id=account_id, webhook_id=second.id, description="renamed")
    assert count() == 1
    with database.transaction() as session:
        endpoints.delete(session, account_id=account_id, webhook_id=second.id)
    assert count() == 0


def test_after_a_rotation_both_secrets_sign_for_a_day(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        webhook, old = endpoints.create(
            session, account_id=account_id, url="https://a.example/", events=["*"], description=""
        )
        webhook, new = endpoints.rotate_secret(session, account_id=account_id, webhook_id=webhook.id)
        now = webhook.updated_at
        assert endpoints.signing_secrets(webhook, now) == [new, old]
        assert endpoints.signing_secrets(webhook, now + endpoints.ROTATION_MS) == [new]
        webhook, newest = endpoints.rotate_secret(session, account_id=account_id, webhook_id=webhook.id)
        assert endpoints.signing_secrets(webhook, now) == [newest, new]  # the oldest ends at once
