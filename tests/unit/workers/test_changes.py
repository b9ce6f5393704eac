"""The purge_changes actor: old changes and ended webhook deliveries go, recent ones stay; run
again, it changes nothing."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select, update

from cardvault.bootstrap import bootstrap
from cardvault.domain import changes
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.models import Change, WebhookDelivery
from cardvault.domain.webhooks import endpoints, events
from cardvault.settings import Settings
from cardvault.workers.changes import purge_changes
from tests.conftest import app_env


def test_the_actor_purges_what_is_past_the_retention_and_nothing_else(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    bootstrap(
        Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_CHANGES_DAYS": "1"}), database=database
    )
    with database.transaction() as session:
        old = editing.add_card(session, account_id=account_id, content="old").card.id
    with database.transaction() as session:
        session.execute(update(Change).where(Change.resource_id == old).values(changed_at=0))
        kept = editing.add_card(session, account_id=account_id, content="kept").card.id
    purge_changes()
    purge_changes()  # nothing left to purge
    with database.transaction(write=False) as session:
        assert [c.resource_id for c in changes.page(session, account_id=account_id, after=0, limit=10)] == [
            kept
        ]
        assert changes.purged_through(session, account_id=account_id) == 1


def test_the_actor_purges_webhook_deliveries_that_ended_before_the_retention(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    bootstrap(
        Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_CHANGES_DAYS": "1"}), database=database
    )
    with database.transaction() as session:
        webhook, _ = endpoints.create(
            session, account_id=account_id, url="https://hooks.example/", events=["*"], description=""
        )
        made = {name: events.ping(session, webhook) for name in ("old", "recent", "pending")}
        for name in ("old", "recent"):
            made[name].status = "succeeded"
        made["old"].updated_at = 0
        made["pending"].updated_at = 0
        session.flush()
        ids = {name: delivery.id for name, delivery in made.items()}
    purge_changes()
    with database.transaction(write=False) as session:
        left = set(session.scalars(select(WebhookDelivery.id)))
    assert ids["old"] not in left and {ids["recent"], ids["pending"]} <= left
