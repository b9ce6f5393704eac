"""Migrations that carry data forward: link cards saved before the link pipeline get its stages."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from cardvault.domain.db import Database


def test_link_cards_saved_before_the_pipeline_get_their_stages(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'old.db'}")
    db.migrate("0007")
    with db.transaction() as session:
        session.execute(
            text("INSERT INTO accounts (id, name, name_key, created_at) VALUES ('acc_1', 'a', 'a', 1)")
        )
        for pk, kind, url, deleted in (
            (1, "link", "https://example.com/a", None),
            (2, "link", "https://example.com/b", 5),  # in Trash
            (3, "text", None, None),
        ):
            session.execute(
                text(
                    "INSERT INTO cards (pk, id, account_id, type, content, url, is_favorited, "
                    "created_at, updated_at, deleted_at) "
                    "VALUES (:pk, :id, 'acc_1', :kind, '', :url, false, 1, 1, :deleted)"
                ),
                {"pk": pk, "id": f"crd_{pk}", "kind": kind, "url": url, "deleted": deleted},
            )
    db.migrate()
    with db.transaction(write=False) as session:
        rows = session.execute(text("SELECT card_pk, stage, state, attempts, updated_at FROM card_stages"))
        assert sorted(rows) == [(1, "linkMetadata", "pending", 0, 0), (1, "linkPreview", "pending", 0, 0)]
    db.dispose()
