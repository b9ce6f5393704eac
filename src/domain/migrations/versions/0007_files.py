"""Files: uploads, a card's stored file and its renditions, the processing stages of each card,
and the objects doomed when their card goes.

An object key held in a card column is doomed (queued for deletion from the blob store) by a
trigger when its card is deleted, by any path (delete forever, emptying or purging Trash, an
account's cascade), or when the column changes. A worker deletes doomed objects and their rows.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The card columns that hold object keys.
OBJECT_COLUMNS = ("file_object", "compact_object", "placeholder_object", "thumbnail_object")


def upgrade() -> None:
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "account_id",
            sa.String(64),
            sa.ForeignKey("accounts.id", ondelete="CASCADE", name="fk_uploads_account_id_accounts"),
            nullable=False,
        ),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("card_id", sa.String(64)),
        sa.Column("object_key", sa.Text, nullable=False),
        sa.Column("file_name", sa.String(255), nullable=False),
        sa.Column("declared_size", sa.BigInteger, nullable=False),
        sa.Column("declared_type", sa.String(255), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.Column("attached_at", sa.BigInteger),
    )
    op.create_index("ix_uploads_created_at", "uploads", ["created_at"])
    op.create_table(
        "doomed_objects",
        sa.Column("key", sa.String(1024), primary_key=True),
        sa.Column("doomed_at", sa.BigInteger, nullable=False),
    )
    with op.batch_alter_table("cards") as batch:
        batch.add_column(sa.Column("file_object", sa.Text))
        batch.add_column(sa.Column("file_etag", sa.String(128)))
        batch.add_column(sa.Column("file_kind", sa.String(16)))
        batch.add_column(sa.Column("file_extension", sa.String(32)))
        batch.add_column(sa.Column("file_language", sa.String(32)))
        batch.add_column(sa.Column("file_width", sa.Integer))
        batch.add_column(sa.Column("file_height", sa.Integer))
        batch.add_column(sa.Column("file_preview", sa.JSON))
        batch.add_column(sa.Column("compact_object", sa.Text))
        batch.add_column(sa.Column("placeholder_object", sa.Text))
        batch.add_column(sa.Column("thumbnail_object", sa.Text))
        batch.add_column(
            sa.Column("thumbnail_overridden", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.create_table(
        "card_stages",
        sa.Column(
            "card_pk",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.ForeignKey("cards.pk", ondelete="CASCADE", name="fk_card_stages_card_pk_cards"),
            primary_key=True,
        ),
        sa.Column("stage", sa.String(16), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("error_code", sa.String(64)),
        sa.Column("started_at", sa.BigInteger),
        sa.Column("completed_at", sa.BigInteger),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )
    # The sweeper's question: which stages wait or run, since when.
    op.create_index(
        "ix_card_stages_unsettled",
        "card_stages",
        ["updated_at"],
        postgresql_where=sa.text("state IN ('pending', 'running')"),
        sqlite_where=sa.text("state IN ('pending', 'running')"),
    )
    _create_triggers(op.get_bind().dialect.name)


def _create_triggers(dialect: str) -> None:
    now = (
        "CAST(strftime('%s','now') AS INTEGER) * 1000"
        if dialect == "sqlite"
        else "CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)"
    )
    if dialect == "sqlite":
        for column in OBJECT_COLUMNS:
            doom = f"INSERT OR IGNORE INTO doomed_objects (key, doomed_at) VALUES (OLD.{column}, {now});"
            op.execute(
                f"CREATE TRIGGER cards_{column}_deleted AFTER DELETE ON cards "
                f"WHEN OLD.{column} IS NOT NULL BEGIN {doom} END"
            )
            op.execute(
                f"CREATE TRIGGER cards_{column}_replaced AFTER UPDATE OF {column} ON cards "
                f"WHEN OLD.{column} IS NOT NULL AND OLD.{column} IS NOT NEW.{column} BEGIN {doom} END"
            )
        return
    inserts = "\n".join(
        f"  IF OLD.{c} IS NOT NULL AND (TG_OP = 'DELETE' OR OLD.{c} IS DISTINCT FROM NEW.{c}) THEN\n"
        f"    INSERT INTO doomed_objects (key, doomed_at) VALUES (OLD.{c}, {now})\n"
        "      ON CONFLICT (key) DO NOTHING;\n"
        "  END IF;"
        for c in OBJECT_COLUMNS
    )
    op.execute(
        "CREATE FUNCTION cards_doom_objects() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n"
        f"{inserts}\n  RETURN NULL;\nEND\n$$"
    )
    op.execute(
        f"CREATE TRIGGER cards_doom_objects AFTER DELETE OR UPDATE OF {', '.join(OBJECT_COLUMNS)} ON cards "
        "FOR EACH ROW EXECUTE FUNCTION cards_doom_objects()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for column in OBJECT_COLUMNS:
            op.execute(f"DROP TRIGGER cards_{column}_deleted")
            op.execute(f"DROP TRIGGER cards_{column}_replaced")
    else:
        op.execute("DROP TRIGGER cards_doom_objects ON cards")
        op.execute("DROP FUNCTION cards_doom_objects()")
    op.drop_index("ix_card_stages_unsettled", "card_stages")
    op.drop_table("card_stages")
    with op.batch_alter_table("cards") as batch:
        for column in (
            "file_object", "file_etag", "file_kind", "file_extension", "file_language", "file_width",
            "file_height", "file_preview", "compact_object", "placeholder_object", "thumbnail_object",
            "thumbnail_overridden",
        ):  # fmt: skip
            batch.drop_column(column)
    op.drop_table("doomed_objects")
    op.drop_index("ix_uploads_created_at", "uploads")
    op.drop_table("uploads")
