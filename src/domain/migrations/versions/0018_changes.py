"""The changes feed: each account's latest change per resource, in commit order, and the
counter that orders them.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "changes",
        sa.Column(
            "account_id", sa.String(64), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("resource_id", sa.String(64), nullable=False),
        sa.Column("action", sa.String(8), nullable=False),
        sa.Column("changed_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("account_id", "sequence"),
    )
    op.create_index("ix_changes_resource", "changes", ["account_id", "kind", "resource_id"], unique=True)
    op.create_index("ix_changes_changed", "changes", ["changed_at"])
    op.create_table(
        "change_counters",
        sa.Column(
            "account_id", sa.String(64), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("last_sequence", sa.BigInteger, nullable=False),
        sa.Column("purged_through", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("account_id"),
    )


def downgrade() -> None:
    op.drop_table("change_counters")
    op.drop_index("ix_changes_changed", "changes")
    op.drop_index("ix_changes_resource", "changes")
    op.drop_table("changes")
