"""Share links (cardvault.domain.shares): a card or a folder anyone holding the link can read,
found by the SHA-256 of its token (the token itself is never stored).

Revision ID: 0033
Revises: 0031 (0032 is another branch's; re-chained when both land)
"""

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # as cards.pk


def upgrade() -> None:
    op.create_table(
        "shares",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "account_id", sa.String(64), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("card_pk", _SERIAL, sa.ForeignKey("cards.pk", ondelete="CASCADE"), nullable=True),
        sa.Column("folder_id", sa.String(64), sa.ForeignKey("folders.id", ondelete="CASCADE"), nullable=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_shares_token_hash"),
        sa.Column("title", sa.String(300), nullable=True),
        sa.Column("include_notes", sa.Boolean, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_shares_account_created", "shares", ["account_id", "created_at", "id"])
    op.create_index("ix_shares_card_pk", "shares", ["card_pk"])
    op.create_index("ix_shares_folder_id", "shares", ["folder_id"])


def downgrade() -> None:
    op.drop_table("shares")
