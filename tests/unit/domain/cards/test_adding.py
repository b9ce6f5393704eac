"""Adding a card that may take an upload, on a real database (SQLite and PostgreSQL)."""

from pathlib import Path

import pytest

from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.domain.cards import adding, editing
from cardvault.domain.db import Database
from cardvault.domain.errors import UploadNotFound
from cardvault.domain.models import Card


def _store(tmp_path: Path) -> LocalDiskStore:
    return LocalDiskStore(tmp_path, secret_key="k" * 48, public_url="http://127.0.0.1:9")


class TestAddingCard:
    def test_the_card_is_committed_when_the_block_ends(
        self, database: Database, account_id: str, tmp_path: Path
    ) -> None:
        with adding.adding_card(database, _store(tmp_path), account_id=account_id, content="hi") as (
            session,
            written,
        ):
            card = written.card
            assert session.get(Card, card.pk) is card
        with database.transaction(write=False) as session:
            assert editing.get_card(session, account_id=account_id, card_id=card.id).content == "hi"

    def test_an_error_in_the_block_adds_nothing(
        self, database: Database, account_id: str, tmp_path: Path
    ) -> None:
        with (
            pytest.raises(RuntimeError),
            adding.adding_card(database, _store(tmp_path), account_id=account_id, content="no") as (
                _,
                written,
            ),
        ):
            raise RuntimeError
        with database.transaction(write=False) as session:
            assert session.get(Card, written.card.pk) is None

    def test_an_unknown_file_key_is_refused_before_the_write_transaction(
        self, database: Database, account_id: str, tmp_path: Path
    ) -> None:
        with (
            pytest.raises(UploadNotFound),
            adding.adding_card(database, _store(tmp_path), account_id=account_id, file_key="upl_" + "a" * 26),
        ):
            pytest.fail("no card is added")
