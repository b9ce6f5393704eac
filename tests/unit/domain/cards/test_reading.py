"""Reading cards at scale: one statement per card or page, and plans that use the indexes
(SQLite and PostgreSQL)."""

from collections.abc import Callable

import pytest
from sqlalchemy import event

from cardvault.domain import folders
from cardvault.domain.cards import editing, reading
from cardvault.domain.db import Database
from cardvault.domain.errors import NotFound

SECRET = "k" * 40


def statements(database: Database) -> Callable[[], list[str]]:
    """Record the queries sent from now on; call the result to stop and get them."""
    sent: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(statement)

    event.listen(database.engine, "before_cursor_execute", record)

    def stop() -> list[str]:
        event.remove(database.engine, "before_cursor_execute", record)
        return [s for s in sent if s.lstrip().upper().startswith("SELECT") and s.strip() != "SELECT 1"]

    return stop


class TestCardView:
    def test_one_statement_reads_a_card_with_its_tags_and_folders(
        self, database: Database, account_id: str
    ) -> None:
        with database.transaction() as session:
            card = editing.add_card(session, account_id=account_id, content="x", tags=["b", "A", "c"]).card
            first = folders.create_folder(session, account_id=account_id, name="First")
            second = folders.create_folder(session, account_id=account_id, name="Second")
        with database.transaction() as session:
            folders.add_cards(session, account_id=account_id, folder_id=second.id, card_ids=[card.id])
        with database.transaction() as session:
            folders.add_cards(session, account_id=account_id, folder_id=first.id, card_ids=[card.id])
        stop = statements(database)
        with database.transaction(write=False, snapshot=False) as session:
            view = reading.get_card_view(session, account_id=account_id, card_id=card.id)
            if database.dialect == "postgresql":  # no BEGIN and COMMIT around a single statement
                assert session.connection().connection.driver_connection.autocommit is True
        sent = stop()
        assert (view.tags, view.ai_tags, view.folder_ids) == (["b", "A", "c"], [], [second.id, first.id])
        assert len(sent) == 1, sent

    def test_another_accounts_card_is_not_found(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        with database.transaction() as session:
            card = editing.add_card(session, account_id=owner, content="mine").card
        with database.transaction(write=False) as session, pytest.raises(NotFound):
            reading.get_card_view(session, account_id=other, card_id=card.id)
