"""The cards an account holds, counted on its row (cardvault.domain.cards.holdings): a card
made counts, one deleted for good (alone, by emptying Trash, by the purge) no longer does, and
past CARDVAULT_MAX_CARDS createCard answers 409 CARD_LIMIT_REACHED, as past
CARDVAULT_MAX_FOLDERS createFolder answers FOLDER_LIMIT_REACHED."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import update
from starlette.testclient import TestClient

from cardvault.domain.cards import editing, holdings, trash
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import api_of_new_account, app_env


def _held(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        return holdings.held(session, account_id=account_id)


def test_cards_made_and_deleted_for_good_move_the_count(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        ids = [
            editing.add_card(session, account_id=account_id, content=f"note {n}").card.id for n in range(5)
        ]
    assert _held(database, account_id) == 5
    with database.transaction() as session:
        for card_id in ids:
            trash.move_to_trash(session, account_id=account_id, card_id=card_id)
        trash.delete_forever(session, account_id=account_id, card_id=ids[0])
    assert _held(database, account_id) == 4  # Trash counts until a card is deleted for good
    with database.transaction() as session:
        trash.empty_trash(session, account_id=account_id)
    assert _held(database, account_id) == 0
    with database.transaction() as session:
        old = editing.add_card(session, account_id=account_id, content="old").card
        trash.move_to_trash(session, account_id=account_id, card_id=old.id)
        session.execute(update(Card).where(Card.pk == old.pk).values(deleted_at=1))
    assert _held(database, account_id) == 1
    with database.transaction() as session:
        trash.purge_expired(session, retention_ms=1000)
    assert _held(database, account_id) == 0


def test_create_card_and_create_folder_answer_409_past_the_accounts_caps(
    tmp_path: Path, database: Database
) -> None:
    env = {**app_env(tmp_path, database), "CARDVAULT_MAX_CARDS": "2", "CARDVAULT_MAX_FOLDERS": "1"}
    with TestClient(create_app(Settings.from_env(env), database), raise_server_exceptions=False) as client:
        api = api_of_new_account(client, database, "caps")
        for n in range(2):
            api.create(content=f"note {n}")
        refused = api.post("/v1/cards", json={"content": "one too many"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "CARD_LIMIT_REACHED"
        assert refused.json()["details"] == {"limit": 2}
        assert _held(database, api.account_id) == 2  # nothing counted for the refused one
        assert api.post("/v1/folders", json={"name": "Reading"}).status_code == 201
        refused = api.post("/v1/folders", json={"name": "Later"})
        assert refused.status_code == 409, refused.text
        assert (refused.json()["code"], refused.json()["details"]) == ("FOLDER_LIMIT_REACHED", {"limit": 1})
