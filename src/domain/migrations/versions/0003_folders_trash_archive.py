"""Folders, and the Trash and archive flags of cards.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("cards") as batch:
        batch.add_column(sa.Column("deleted_at", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("archived_at", sa.BigInteger, nullable=True))
    op.create_index("ix_cards_deleted_at", "cards", ["deleted_at"])
    op.create_table(
        "folders",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("name_key", sa.String(1200), nullable=False),
        sa.Column("color", sa.String(16), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_folders"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_folders_account_id_accounts"
        ),
        sa.UniqueConstraint("account_id", "name_key", name="uq_folders_account_id_name_key"),
    )
    op.create_table(
        "folder_cards",
        sa.Column("folder_id", sa.String(64), nullable=False),
        sa.Column("card_pk", SERIAL, nullable=False),
        sa.Column("added_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("folder_id", "card_pk", name="pk_folder_cards"),
        sa.ForeignKeyConstraint(
            ["folder_id"], ["folders.id"], ondelete="CASCADE", name="fk_folder_cards_folder_id_folders"
        ),
        sa.ForeignKeyConstraint(
            ["card_pk"], ["cards.pk"], ondelete="CASCADE", name="fk_folder_cards_card_pk_cards"
        ),
    )
    op.create_index("ix_folder_cards_card_pk", "folder_cards", ["card_pk"])


def downgrade() -> None:
    op.drop_table("folder_cards")
    op.drop_table("folders")
    op.drop_index("ix_cards_deleted_at", "cards")
    with op.batch_alter_table("cards") as batch:
        batch.drop_column("archived_at")
        batch.drop_column("deleted_at")
