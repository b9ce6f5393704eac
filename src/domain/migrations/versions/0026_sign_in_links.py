"""One-time sign-in links: the embedded default prints one at start-up, so the local account
(which has no password) can open the card pages its cards' appUrl names.

Revision ID: 0026
Revises: 0025
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sign_in_links",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_sign_in_links"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_sign_in_links_account_id_accounts"
        ),
    )
    op.create_index("ix_sign_in_links_account_id", "sign_in_links", ["account_id"])
    op.create_index("ix_sign_in_links_expires_at", "sign_in_links", ["expires_at"])


def downgrade() -> None:
    op.drop_table("sign_in_links")
