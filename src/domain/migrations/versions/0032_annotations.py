"""Annotations (cardvault.domain.annotations): a passage of a card's text with a note and a
colour, or a note on the card as a whole, deleted with its card; and each card's count of them.

Revision ID: 0032
Revises: 0031
"""

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "annotations",
        sa.Column(
            "pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("id", sa.String(64), nullable=False, unique=True),
        sa.Column(
            "account_id", sa.String(64), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("card_pk", sa.BigInteger(), sa.ForeignKey("cards.pk", ondelete="CASCADE"), nullable=False),
        sa.Column("card_id", sa.String(64), nullable=False),
        sa.Column("quote", sa.Text()),
        sa.Column("prefix", sa.Text()),
        sa.Column("suffix", sa.Text()),
        sa.Column("source", sa.String(16)),
        sa.Column("start", sa.Integer()),
        sa.Column("end", sa.Integer()),
        sa.Column("orphaned", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("note", sa.Text()),
        sa.Column("color", sa.String(16)),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_annotations_card_start", "annotations", ["card_pk", "start", "pk"])
    op.create_index("ix_annotations_account_created", "annotations", ["account_id", "created_at", "pk"])
    op.add_column("cards", sa.Column("annotation_count", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    op.drop_column("cards", "annotation_count")
    op.drop_table("annotations")
