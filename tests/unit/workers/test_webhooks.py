"""The webhook actors' edges (cardvault.workers.webhooks): Retry-After read as seconds or an HTTP
date and capped at a day; what a send meets, as an outcome and never an exception."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path

import pytest

from cardvault.bootstrap import bootstrap
from cardvault.domain.db import Database
from cardvault.domain.webhooks.deliveries import Attempt, Batch
from cardvault.settings import Settings
from cardvault.workers import broker, webhooks
from tests.conftest import app_env


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("5", 5_000),
        (" 120 ", 120_000),
        ("999999999999", 86_400_000),
        ("soon", None),
        ("-3", None),
        ("٣", None),
    ],
)
def test_retry_after_in_seconds(value: str | None, expected: int | None) -> None:
    assert webhooks.retry_after(value) == expected


def test_retry_after_as_an_http_date() -> None:
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    wait = webhooks.retry_after(later)
    assert wait is not None and 55_000 <= wait <= 61_000
    assert webhooks.retry_after(email.utils.formatdate(time.time() - 60, usegmt=True)) == 0


def test_a_send_that_cannot_be_made_fails_every_attempt_of_the_batch(
    tmp_path: Path, database: Database
) -> None:
    bootstrap(Settings.from_env(app_env(tmp_path, database)), database=database)
    url = "https://10.0.0.1/hook"
    attempts = [
        Attempt(delivery_id=f"msg_{n}", url=url, body="{}", headers={}, lease="try_x") for n in range(2)
    ]
    sent: webhooks.Sent = []
    unsent = webhooks.send(
        broker.services_of(broker.broker), Batch(url, attempts, full=False), sent, seconds=5
    )
    assert [attempt for attempt, _ in sent] == attempts and unsent == []
    for _, outcome in sent:
        assert outcome.status is None and outcome.error is not None
        assert outcome.error.startswith("BLOCKED_ADDRESS")
