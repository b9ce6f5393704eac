"""The purge of expired Trash (cardvault.workers.trash), seen through the HTTP API."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from cardvault.bootstrap import bootstrap
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.settings import Settings
from cardvault.workers.trash import purge_trash
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


class TestPurge:
    def test_cards_past_the_retention_are_deleted_for_good(
        self, api: Api, database: Database, settings: Settings
    ) -> None:
        old, recent = api.create(content="old"), api.create(content="recent")
        for card in (old, recent):
            api.post(f"/v1/cards/{card['id']}/trash")
        with database.transaction() as session:
            session.execute(
                update(Card).where(Card.id == old["id"]).values(deleted_at=now_ms() - 31 * 86_400_000)
            )
        bootstrap(settings, database=database)
        purge_trash()
        purge_trash()  # a second run changes nothing
        assert_error(api.get(f"/v1/cards/{old['id']}"), 404, "NOT_FOUND")
        assert [i["id"] for i in api.get("/v1/trash").json()["items"]] == [recent["id"]]

    @pytest.mark.parametrize("days", ["0.5"])
    def test_the_retention_is_configurable(self, tmp_path: object, days: str) -> None:
        assert (
            Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_TRASH_DAYS": days}).trash_days
            == 0.5
        )
