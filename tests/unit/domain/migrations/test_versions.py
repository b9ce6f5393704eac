"""Migrations that carry data forward: cards saved before a stage existed get it."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text

from cardvault.domain.db import MIGRATIONS, Database


def saved_before(
    tmp_path: Path, revision: str, cards: list[tuple[int, str, str | None, int | None]]
) -> Database:
    """A database at ``revision`` holding these cards (pk, type, url, deleted_at)."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'old.db'}")
    db.migrate(revision)
    with db.transaction() as session:
        session.execute(
            text("INSERT INTO accounts (id, name, name_key, created_at) VALUES ('acc_1', 'a', 'a', 1)")
        )
        for pk, kind, url, deleted in cards:
            session.execute(
                text(
                    "INSERT INTO cards (pk, id, account_id, type, content, url, is_favorited, "
                    "created_at, updated_at, deleted_at) "
                    "VALUES (:pk, :id, 'acc_1', :kind, '', :url, false, 1, 1, :deleted)"
                ),
                {"pk": pk, "id": f"crd_{pk}", "kind": kind, "url": url, "deleted": deleted},
            )
    return db


def test_link_cards_saved_before_the_pipeline_get_their_stages(tmp_path: Path) -> None:
    db = saved_before(
        tmp_path,
        "0007",
        [
            (1, "link", "https://example.com/a", None),
            (2, "link", "https://example.com/b", 5),
            (3, "text", None, None),
        ],
    )
    db.migrate("0008")
    with db.transaction(write=False) as session:
        rows = session.execute(text("SELECT card_pk, stage, state, attempts, updated_at FROM card_stages"))
        assert sorted(rows) == [(1, "linkMetadata", "pending", 0, 0), (1, "linkPreview", "pending", 0, 0)]
    db.dispose()


def test_cards_saved_before_the_ai_stage_get_it(tmp_path: Path) -> None:
    db = saved_before(
        tmp_path,
        "0008",
        [
            (1, "link", "https://example.com/a", None),
            (2, "link", None, None),  # no page to describe
            (3, "text", None, None),
            (4, "quote", None, None),
            (5, "text", None, 5),  # in Trash
            (6, "palette", None, None),
            (7, "image", None, None),
        ],
    )
    db.migrate()
    with db.transaction(write=False) as session:
        rows = session.execute(
            text("SELECT card_pk, state, attempts, updated_at FROM card_stages WHERE stage = 'ai'")
        )
        assert sorted(rows) == [(pk, "pending", 0, 0) for pk in (1, 3, 4)]
    db.dispose()


def test_file_cards_saved_before_the_media_stages_get_them(tmp_path: Path) -> None:
    db = saved_before(
        tmp_path,
        "0009",
        [
            (1, "video", None, None),
            (2, "audio", None, None),
            (3, "document", None, None),
            (4, "video", None, 5),
        ],
    )
    with db.transaction() as session:
        session.execute(text("UPDATE cards SET file_object = 'accounts/acc_1/files/f' || pk"))
    db.migrate()
    with db.transaction(write=False) as session:
        rows = session.execute(text("SELECT card_pk, stage FROM card_stages WHERE state = 'pending'"))
        assert sorted(rows) == [
            (1, "ai"), (1, "media"), (1, "transcript"),
            (2, "ai"), (2, "media"), (2, "transcript"),
            (3, "ai"), (3, "media"),
        ]  # fmt: skip
        session.execute(text("UPDATE cards SET scrub_object = 'accounts/acc_1/renditions/1/a' WHERE pk = 1"))
        session.execute(text("UPDATE cards SET scrub_object = 'accounts/acc_1/renditions/1/b' WHERE pk = 1"))
        doomed = session.execute(text("SELECT key FROM doomed_objects")).scalars().all()
        assert doomed == ["accounts/acc_1/renditions/1/a"]  # a replaced scrub strip is doomed
    db.dispose()


def test_a_caption_file_is_doomed_when_replaced_or_deleted_with_its_card(tmp_path: Path) -> None:
    db = saved_before(tmp_path, "0010", [(1, "audio", None, None), (2, "video", None, None)])
    db.migrate()
    with db.transaction() as session:
        session.execute(
            text("UPDATE cards SET captions_object = 'accounts/acc_1/captions/crd_' || pk || '/a'")
        )
        session.execute(
            text("UPDATE cards SET captions_object = 'accounts/acc_1/captions/crd_1/b' WHERE pk = 1")
        )
        session.execute(text("DELETE FROM cards WHERE pk = 2"))
        doomed = session.execute(text("SELECT key FROM doomed_objects ORDER BY key")).scalars().all()
        assert doomed == ["accounts/acc_1/captions/crd_1/a", "accounts/acc_1/captions/crd_2/a"]
    db.dispose()


def test_undoing_the_caption_columns_keeps_every_other_trigger(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'cycle.db'}")
    db.migrate()

    def triggers() -> set[str]:
        with db.transaction(write=False) as session:
            return set(session.scalars(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")))

    before = triggers()
    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    with db.engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0010")
        connection.commit()
    assert before - triggers() == {"cards_captions_object_deleted", "cards_captions_object_replaced"}
    db.migrate()
    assert triggers() == before
    db.dispose()


def test_undoing_sign_in_keeps_every_account_key_and_card(tmp_path: Path) -> None:
    # On SQLite a migration that copied the accounts table would cascade to every card; 0013
    # only adds and drops columns, both ways.
    db = saved_before(tmp_path, "0012", [(1, "text", None, None), (2, "link", "https://a.example", None)])
    with db.transaction() as session:
        session.execute(
            text(
                "INSERT INTO api_keys (id, account_id, secret_hash, created_at) "
                "VALUES ('key_1', 'acc_1', 'h', 1)"
            )
        )
    db.migrate()
    with db.transaction(write=False) as session:
        key = session.execute(text("SELECT name, scopes, last_chars FROM api_keys")).one()
        assert tuple(key) == ("", "read write keys", None)  # an old key keeps every scope
    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    with db.engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0012")
        connection.commit()
    with db.transaction(write=False) as session:
        assert session.scalar(text("SELECT count(*) FROM cards")) == 2
        assert session.scalar(text("SELECT count(*) FROM api_keys")) == 1
    db.migrate()
    with db.transaction(write=False) as session:
        assert session.scalar(text("SELECT count(*) FROM cards")) == 2
    db.dispose()
