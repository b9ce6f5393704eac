"""Migrations that carry data forward: cards saved before a stage existed get it, accounts saved
before the quota counters get them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import inspect, text

from cardvault.domain.database import open_database
from cardvault.domain.db import MIGRATIONS, Database
from tests.conftest import BACKENDS, fresh_postgres_database


def saved_before(
    tmp_path: Path, revision: str, cards: list[tuple[int, str, str | None, int | None]]
) -> Database:
    """A database at ``revision`` holding these cards (pk, type, url, deleted_at)."""
    db = open_database(f"sqlite:///{tmp_path / 'old.db'}")
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


def downgrade(db: Database, revision: str) -> None:
    """Undo the migrations after ``revision``."""
    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    with db.engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
        connection.commit()


def at_revision(tmp_path: Path, backend: str, name: str, revision: str) -> Database:
    """An empty database of ``backend`` (PostgreSQL: a fresh one called ``name``) at ``revision``."""
    url = (
        f"sqlite:///{tmp_path / 'old.db'}"
        if backend == "sqlite"
        else fresh_postgres_database(name, "PostgreSQL tier")
    )
    db = open_database(url)
    db.migrate(revision)
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
    db = open_database(f"sqlite:///{tmp_path / 'cycle.db'}")
    db.migrate()

    def triggers() -> set[str]:
        with db.transaction(write=False) as session:
            return set(session.scalars(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")))

    before = triggers()
    downgrade(db, "0010")
    columns = ("captions", "screenshot", "screenshot_compact", "screenshot_placeholder", "archive", "reader")
    later = {"search_word_grams_insert", "search_word_grams_delete"}  # 0030's, undone on the way
    assert before - triggers() == later | {
        f"cards_{column}_object_{change}" for column in columns for change in ("deleted", "replaced")
    }
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
    downgrade(db, "0012")
    with db.transaction(write=False) as session:
        assert session.scalar(text("SELECT count(*) FROM cards")) == 2
        assert session.scalar(text("SELECT count(*) FROM api_keys")) == 1
    db.migrate()
    with db.transaction(write=False) as session:
        assert session.scalar(text("SELECT count(*) FROM cards")) == 2
    db.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_quota_counters_start_as_the_sums_of_the_rows_they_count(tmp_path: Path, backend: str) -> None:
    db = at_revision(tmp_path, backend, "cardvault_quota_counters", "0014")
    cards = [(1, "acc_1", 100, None), (2, "acc_1", 250, 5), (3, "acc_1", None, None), (4, "acc_2", 7, None)]
    uploads = [  # id, account, declared size, attached_at
        ("upl_1", "acc_1", 10, None),
        ("upl_2", "acc_1", 20, None),
        ("upl_3", "acc_1", 40, 9),
        ("upl_4", "acc_2", 5, 9),
    ]
    with db.transaction() as session:
        for account in ("acc_1", "acc_2", "acc_3"):
            session.execute(
                text("INSERT INTO accounts (id, name, name_key, created_at) VALUES (:id, :id, :id, 1)"),
                {"id": account},
            )
        for pk, account, size, deleted in cards:
            session.execute(
                text(
                    "INSERT INTO cards (pk, id, account_id, type, content, is_favorited, created_at, "
                    "updated_at, deleted_at, file_size) "
                    "VALUES (:pk, :id, :account, 'image', '', false, 1, 1, :deleted, :size)"
                ),
                {"pk": pk, "id": f"crd_{pk}", "account": account, "deleted": deleted, "size": size},
            )
        for upload_id, account, size, attached in uploads:
            session.execute(
                text(
                    "INSERT INTO uploads (id, account_id, purpose, object_key, file_name, declared_size, "
                    "declared_type, created_at, expires_at, attached_at) "
                    "VALUES (:id, :account, 'card', 'k', 'a.png', :size, 'image/png', 1, 1, :attached)"
                ),
                {"id": upload_id, "account": account, "size": size, "attached": attached},
            )

    def counters() -> list[tuple[str, int, int]]:
        with db.transaction(write=False) as session:
            found = session.execute(
                text("SELECT id, pending_upload_bytes, stored_file_bytes FROM accounts ORDER BY id")
            )
            return [tuple(row) for row in found]

    def indexes() -> set[str]:
        with db.engine.connect() as connection:
            return {str(index["name"]) for index in inspect(connection).get_indexes("uploads")}

    db.migrate()
    # Trash included; an upload a card took and a card without a file count nothing.
    assert counters() == [("acc_1", 30, 350), ("acc_2", 0, 7), ("acc_3", 0, 0)]
    assert "ix_uploads_pending" not in indexes()  # what only the sum read
    downgrade(db, "0014")
    assert "ix_uploads_pending" in indexes()
    with db.transaction(write=False) as session:  # ALTER TABLE: no account, card or upload lost
        assert session.scalar(text("SELECT count(*) FROM cards")) == len(cards)
        assert session.scalar(text("SELECT count(*) FROM uploads")) == len(uploads)
    db.migrate()
    assert counters() == [("acc_1", 30, 350), ("acc_2", 0, 7), ("acc_3", 0, 0)]
    db.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_cards_keep_beyond_their_files_starts_counted_from_what_their_rows_know(
    tmp_path: Path, backend: str
) -> None:
    db = at_revision(tmp_path, backend, "cardvault_held_bytes", "0026")
    captions = json.dumps({"fileName": "a.vtt", "format": "vtt", "size": 300, "cueCount": 2})
    capture = json.dumps({"capturedAt": 1, "archive": {"size": 5000}, "reader": {"size": 70, "wordCount": 9}})
    cards = [  # pk, account, file size, caption file, capture (with its archive and reader objects)
        (1, "acc_1", 100, captions, None),
        (2, "acc_1", None, None, capture),
        (3, "acc_2", 7, None, None),
    ]
    with db.transaction() as session:
        for account in ("acc_1", "acc_2"):
            session.execute(
                text("INSERT INTO accounts (id, name, name_key, created_at) VALUES (:id, :id, :id, 1)"),
                {"id": account},
            )
        for pk, account, size, caption_facts, capture_facts in cards:
            session.execute(
                text(
                    "INSERT INTO cards (pk, id, account_id, type, content, is_favorited, created_at,"
                    " updated_at, file_size, captions_object, captions, archive_object, reader_object,"
                    " capture) VALUES (:pk, :id, :account, 'link', '', false, 1, 1, :size,"
                    " :captions_object, :captions, :archive_object, :reader_object, :capture)"
                ),
                {
                    "pk": pk,
                    "id": f"crd_{pk}",
                    "account": account,
                    "size": size,
                    "captions_object": "c" if caption_facts else None,
                    "captions": caption_facts,
                    "archive_object": "a" if capture_facts else None,
                    "reader_object": "r" if capture_facts else None,
                    "capture": capture_facts,
                },
            )
    db.migrate()
    with db.transaction(write=False) as session:
        held = session.execute(text("SELECT pk, held_bytes FROM cards ORDER BY pk")).all()
        stored = session.execute(text("SELECT id, stored_file_bytes FROM accounts ORDER BY id")).all()
    assert [tuple(row) for row in held] == [(1, 300), (2, 5070), (3, 0)]
    assert [tuple(row) for row in stored] == [("acc_1", 100 + 300 + 5070), ("acc_2", 7)]
    db.dispose()


def test_cards_saved_before_url_keys_are_found_by_their_page(tmp_path: Path) -> None:
    from cardvault.domain.cards import listing
    from cardvault.domain.urls import url_key

    db = saved_before(
        tmp_path,
        "0020",
        [
            (1, "link", "HTTPS://Example.com:443/a?utm_source=x", None),
            (2, "link", "https://example.com/b", None),
            (3, "text", None, None),
            (4, "link", "https://example.com:99999/c", None),  # no normal form: no key
        ],
    )
    db.migrate("0021")
    with db.transaction(write=False) as session:
        keys = {pk: key for pk, key in session.execute(text("SELECT pk, url_key FROM cards"))}
        assert keys == {
            1: url_key("https://example.com/a"),
            2: url_key("https://example.com/b"),
            3: None,
            4: None,
        }
    db.migrate()  # the live listing reads the latest schema
    with db.transaction(write=False) as session:
        filters = listing.CardFilter(url="https://example.com/a#top")
        page = listing.list_cards(session, account_id="acc_1", secret="s" * 48, filters=filters)
        assert [card.pk for card in page.cards] == [1]
    downgrade(db, "0020")  # and back
    assert "url_key" not in {column["name"] for column in inspect(db.engine).get_columns("cards")}
    db.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_cards_indexed_before_positions_are_found_by_phrase_site_and_tier(
    tmp_path: Path, backend: str
) -> None:
    from cardvault.domain.cards import listing
    from cardvault.domain.search.index import tag_words
    from cardvault.domain.search.words import split_words

    db = at_revision(tmp_path, backend, "cardvault_search_positions", "0024")
    cards = [  # pk, content, notes, url, tags: as 0024 indexed them (distinct words, no positions)
        (1, "Animals\nquick brown fox", None, None, ["Fox Den"]),
        (2, "https://blog.example.com/x", None, "https://blog.example.com/x", []),
        (3, "a brown dog", "quick fox notes", None, []),
    ]
    with db.transaction() as session:
        session.execute(
            text("INSERT INTO accounts (id, name, name_key, created_at) VALUES ('acc_1', 'a', 'a', 1)")
        )
        for pk, content, notes, link, tags in cards:
            session.execute(
                text(
                    "INSERT INTO cards (pk, id, account_id, type, content, notes, url, is_favorited, "
                    "created_at, updated_at) "
                    "VALUES (:pk, :id, 'acc_1', 'text', :content, :notes, :url, false, :pk, :pk)"
                ),
                {"pk": pk, "id": f"crd_{pk}", "content": content, "notes": notes, "url": link},
            )
            words = list(dict.fromkeys(split_words(f"{content} {notes or ''} {link or ''}")))
            session.execute(
                text(
                    "INSERT INTO card_search (rowid, words) VALUES (:pk, :words)"
                    if backend == "sqlite"
                    else "INSERT INTO card_search (card_pk, part, tag_key, words) "
                    "VALUES (:pk, 0, '', array_to_tsvector(CAST(:words AS text[])))"
                ),
                {"pk": pk, "words": " ".join(words) if backend == "sqlite" else words},
            )
            for position, tag in enumerate(tags):
                session.execute(
                    text(
                        "INSERT INTO card_tags (card_pk, kind, name_key, name, position, account_id, words, "
                        "card_created_at) VALUES (:pk, 'user', :key, :name, :position, 'acc_1', :words, :pk)"
                    ),
                    {
                        "pk": pk,
                        "key": tag.casefold(),
                        "name": tag,
                        "position": position,
                        "words": tag_words(tag),
                    },
                )
    ids = {1: "body", 2: "link", 3: "noted"}
    db.migrate()

    def found(q: str) -> list[str]:
        with db.transaction(write=False) as session:
            page = listing.list_cards(
                session, account_id="acc_1", secret="s" * 48, filters=listing.CardFilter(q=q)
            )
        return [ids[card.pk] for card in page.cards]

    assert found('"quick brown"') == ["body"]
    assert found('"fox den"') == ["body"]  # the tag rows have positions too
    assert found("site:example.com") == ["link"]
    if backend == "postgresql":  # site keys compare by bytes whatever the database's collation
        with db.transaction(write=False) as session:
            collation = session.scalar(
                text(
                    "SELECT collation_name FROM information_schema.columns "
                    "WHERE table_name = 'cards' AND column_name = 'url_site'"
                )
            )
        assert collation == "C"
    assert found("quick fox") == ["noted", "body"]  # in the headline first
    downgrade(db, "0024")  # and back, still searchable by words
    with db.transaction(write=False) as session:
        old = (
            "SELECT rowid FROM card_search WHERE card_search MATCH 'notes'"
            if backend == "sqlite"
            else "SELECT card_pk FROM card_search WHERE words @@ 'notes'::tsquery AND part = 0"
        )
        assert session.scalars(text(old)).all() == [3]
    db.migrate()
    assert found('"quick brown"') == ["body"]
    db.dispose()


def test_a_sqlite_database_with_tagged_cards_migrates_through_the_table_copies(tmp_path: Path) -> None:
    # 0007 copies `cards` and drops the old table: with foreign keys enforced, the drop deleted
    # the tag rows first, whose triggers wrote the FTS5 tag index within it ("database table is
    # locked"). Found by bench_scale on SQLite.
    db = saved_before(tmp_path, "0006", [(1, "text", None, None)])
    with db.transaction() as session:
        session.execute(
            text(
                "INSERT INTO card_tags (card_pk, kind, name_key, name, position, account_id, words, "
                "card_created_at) VALUES (1, 'user', 'x', 'X', 0, 'acc_1', ' x ', 1)"
            )
        )
    db.migrate()
    with db.transaction(write=False) as session:
        assert session.execute(text("SELECT card_pk, name FROM card_tags")).all() == [(1, "X")]
        assert session.scalar(text("PRAGMA foreign_keys")) == 1  # enforced again
    db.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_vocabulary_starts_counted_from_the_index_rows(tmp_path: Path, backend: str) -> None:
    from cardvault.domain.search import vocabulary
    from cardvault.domain.search.index import fts_text, tsvector, word_runs

    db = at_revision(tmp_path, backend, "cardvault_search_words", "0029")
    cards = [  # pk, account, headline, body, ai_engine
        (1, "acc_1", "Kubernetes notes", "running the cluster", None),
        (2, "acc_1", None, "kubernetes läuft", '{"kind": "offline", "language": "de"}'),
        (3, "acc_2", "Distant account", None, None),
        (4, "acc_1", None, None, None),  # no words
    ]
    with db.transaction() as session:
        for account in ("acc_1", "acc_2"):
            session.execute(
                text("INSERT INTO accounts (id, name, name_key, created_at) VALUES (:a, :a, :a, 1)"),
                {"a": account},
            )
        for pk, account, headline, body, engine in cards:
            session.execute(
                text(
                    "INSERT INTO cards (pk, id, account_id, type, content, is_favorited, created_at, "
                    "updated_at, ai_engine) VALUES (:pk, :id, :a, 'text', '', false, 1, 1, :engine)"
                ),
                {"pk": pk, "id": f"crd_{pk}", "a": account, "engine": engine},
            )
            head, rest = word_runs([headline]), word_runs([body])
            if backend == "sqlite":
                session.execute(
                    text("INSERT INTO card_search (rowid, headline, body) VALUES (:pk, :h, :b)"),
                    {"pk": pk, "h": fts_text(head), "b": fts_text(rest)},
                )
                continue
            for part, runs in ((0, rest), (3, head)):
                if (vector := tsvector(runs)) is not None:
                    session.execute(
                        text(
                            "INSERT INTO card_search (card_pk, part, tag_key, words) "
                            "VALUES (:pk, :part, '', CAST(:v AS tsvector))"
                        ),
                        {"pk": pk, "part": part, "v": vector},
                    )
    db.migrate()
    with db.transaction(write=False) as session:
        held = session.execute(text("SELECT account_id, word, stem, cards FROM search_words")).all()
        lengths = session.execute(text("SELECT pk, search_words FROM cards ORDER BY pk")).all()
        found = vocabulary.forms(session, "acc_1", ["kubernets", "run"], typos=["kubernets"])
    assert sorted(map(tuple, held)) == [
        ("acc_1", "cluster", "cluster", 1),
        ("acc_1", "kubernetes", "kubernet", 2),
        ("acc_1", "lauft", "lauft", 1),  # stemmed as German
        ("acc_1", "notes", "note", 1),
        ("acc_1", "running", "run", 1),
        ("acc_2", "account", "account", 1),
        ("acc_2", "distant", "distant", 1),
    ]  # "the" is a stop word
    assert [tuple(row) for row in lengths] == [(1, 5), (2, 2), (3, 2), (4, 0)]
    assert found["kubernets"].typos == (("kubernetes", 2),) and found["run"].stems == (("running", 1),)
    downgrade(db, "0029")
    with db.engine.connect() as connection:
        assert "search_words" not in inspect(connection).get_table_names()
        assert "search_words" not in {column["name"] for column in inspect(connection).get_columns("cards")}
    db.dispose()


def test_cards_folders_and_webhooks_saved_before_versions_start_at_one(tmp_path: Path) -> None:
    db = saved_before(tmp_path, "0030", [(1, "text", None, None), (2, "link", "https://example.com/", 5)])
    with db.transaction() as session:
        session.execute(
            text(
                "INSERT INTO folders (id, account_id, name, name_key, kind, created_at, updated_at)"
                " VALUES ('fld_1', 'acc_1', 'F', 'f', 'manual', 1, 1)"
            )
        )
    db.migrate()
    with db.transaction(write=False) as session:
        versions = session.execute(
            text("SELECT version FROM cards UNION ALL SELECT version FROM folders")
        ).all()
    assert [row[0] for row in versions] == [1, 1, 1]
    assert "version" in {c["name"] for c in inspect(db.engine).get_columns("webhooks")}
    downgrade(db, "0030")
    for table in ("cards", "folders", "webhooks"):
        assert "version" not in {c["name"] for c in inspect(db.engine).get_columns(table)}
    db.dispose()
