"""Accounts, API keys, cards, card tags and the full-text index.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("name_key", sa.String(800), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_accounts"),
        sa.UniqueConstraint("name_key", name="uq_accounts_name_key"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("revoked_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            ondelete="CASCADE",
            name="fk_api_keys_account_id_accounts",
        ),
        sa.UniqueConstraint("secret_hash", name="uq_api_keys_secret_hash"),
    )
    op.create_index("ix_api_keys_account_id", "api_keys", ["account_id"])
    op.create_table(
        "cards",
        sa.Column("pk", SERIAL, autoincrement=True, nullable=False),
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("notes", sa.Text, nullable=True),
        sa.Column("url", sa.Text, nullable=True),
        sa.Column("source", sa.String(200), nullable=True),
        sa.Column("file_name", sa.String(255), nullable=True),
        sa.Column("file_size", sa.BigInteger, nullable=True),
        sa.Column("mime_type", sa.String(255), nullable=True),
        sa.Column("metadata_title", sa.Text, nullable=True),
        sa.Column("metadata_description", sa.Text, nullable=True),
        sa.Column("ai_summary", sa.Text, nullable=True),
        sa.Column("ai_transcript", sa.Text, nullable=True),
        sa.Column("is_favorited", sa.Boolean, nullable=False),
        sa.Column("completed_at", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_cards"),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            ondelete="CASCADE",
            name="fk_cards_account_id_accounts",
        ),
        sa.UniqueConstraint("id", name="uq_cards_id"),
    )
    op.create_index("ix_cards_account_created", "cards", ["account_id", "created_at", "pk"])
    op.create_table(
        "card_tags",
        sa.Column("card_pk", SERIAL, nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("name_key", sa.String(256), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("words", sa.String(400), nullable=False),
        sa.PrimaryKeyConstraint("card_pk", "kind", "name_key", name="pk_card_tags"),
        sa.ForeignKeyConstraint(
            ["card_pk"], ["cards.pk"], ondelete="CASCADE", name="fk_card_tags_card_pk_cards"
        ),
    )
    op.create_index("ix_card_tags_account_key", "card_tags", ["account_id", "name_key", "card_pk"])

    # The full-text index: one row per card holding its words, already split and folded by
    # cardvault.domain.search, so both databases match the same way.
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE card_search USING fts5(words, tokenize = 'unicode61 remove_diacritics 0')"
        )
        op.execute(
            "CREATE TRIGGER cards_search_delete AFTER DELETE ON cards BEGIN "
            "DELETE FROM card_search WHERE rowid = old.pk; END"
        )
    else:
        op.create_table(
            "card_search",
            sa.Column("card_pk", sa.BigInteger, nullable=False),
            sa.Column("words", sa.dialects.postgresql.TSVECTOR, nullable=False),
            sa.PrimaryKeyConstraint("card_pk", name="pk_card_search"),
            sa.ForeignKeyConstraint(
                ["card_pk"],
                ["cards.pk"],
                ondelete="CASCADE",
                name="fk_card_search_card_pk_cards",
            ),
        )
        op.execute("CREATE INDEX ix_card_search_words ON card_search USING gin (words)")


def downgrade() -> None:
    op.drop_table("card_search")
    op.drop_table("card_tags")
    op.drop_table("cards")
    op.drop_table("api_keys")
    op.drop_table("accounts")
