"""The database as the features use it (cardvault.domain.database): opened there, a write
session records the changes feed and the search vocabulary at COMMIT; the floor's Database
installs only what it is given, so the floor imports no feature."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from cardvault.domain import database as features_database
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.db import Database


def _written(db: Database) -> tuple[int, int]:
    """Add one account and a card; answer how many changes and vocabulary words were written."""
    with db.transaction() as session:
        account_id = accounts.create_account(session, name="floors").id
    with db.transaction() as session:
        editing.add_card(session, account_id=account_id, content="Sourdough starters ferment slowly")
    with db.transaction(write=False) as session:
        changes = session.execute(
            text("SELECT count(*) FROM changes WHERE account_id = :a"), {"a": account_id}
        ).scalar_one()
        words = session.execute(
            text("SELECT count(*) FROM search_words WHERE account_id = :a"), {"a": account_id}
        ).scalar_one()
    return int(changes), int(words)


def test_a_database_opened_for_the_features_records_changes_and_words(tmp_path: Path) -> None:
    db = features_database.open_database(f"sqlite:///{tmp_path / 'features.db'}")
    db.migrate()
    changes, words = _written(db)
    assert changes == 1
    assert words >= 4  # sourdough, starters, ferment, slowly


def test_the_floor_installs_only_the_writers_it_is_given(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'floor.db'}", at_commit=())
    db.migrate()
    assert _written(db) == (0, 0)


def test_the_vocabulary_writes_before_the_changes_feed() -> None:
    # The change counters are the last lock a writer takes (cardvault.domain.db's lock order).
    names = [f"{w.__module__}.{w.__name__}" for w in features_database.AT_COMMIT]
    assert names == [
        "cardvault.domain.search.vocabulary.install",
        "cardvault.domain.versions.install",  # takes no lock: raises versions in the flushes' UPDATEs
        "cardvault.domain.changes.install",
    ]
