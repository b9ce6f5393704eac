"""Feed subscriptions (cardvault.domain.subscriptions): feeds the workers poll for an account,
each new entry a link card.

Revision ID: 0035
Revises: 0034
"""

import sqlalchemy as sa
from alembic import op

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "account_id", sa.String(64), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("host", sa.String(300), nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column(
            "folder_id", sa.String(64), sa.ForeignKey("folders.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("etag", sa.Text),
        sa.Column("last_modified", sa.String(100)),
        sa.Column("next_poll_at", sa.BigInteger, nullable=False),
        sa.Column("last_polled_at", sa.BigInteger),
        sa.Column("last_error", sa.String(32)),
        sa.Column("last_error_message", sa.Text),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("entries_saved", sa.Integer, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_subscriptions_account_created", "subscriptions", ["account_id", "created_at", "id"])
    op.create_index("ix_subscriptions_due", "subscriptions", ["next_poll_at"])


def downgrade() -> None:
    op.drop_table("subscriptions")
