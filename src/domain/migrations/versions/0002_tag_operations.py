"""Tag operations: account-wide rename, merge and delete, run in batches by workers.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tag_operations",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("running_account_id", sa.String(64), nullable=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("from_name", sa.String(256), nullable=False),
        sa.Column("from_key", sa.String(256), nullable=False),
        sa.Column("to_name", sa.String(64), nullable=True),
        sa.Column("to_key", sa.String(256), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("processed", sa.Integer, nullable=False),
        sa.Column("changed", sa.Integer, nullable=False),
        sa.Column("cursor_pk", sa.BigInteger, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger, nullable=False),
        sa.Column("completed_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tag_operations"),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            ondelete="CASCADE",
            name="fk_tag_operations_account_id_accounts",
        ),
        # One running operation per account, enforced by the database: the column holds the
        # account id while the operation runs and NULL after (NULLs never collide).
        sa.UniqueConstraint("running_account_id", name="uq_tag_operations_running_account_id"),
    )
    op.create_index("ix_tag_operations_status_heartbeat", "tag_operations", ["status", "heartbeat_at"])


def downgrade() -> None:
    op.drop_table("tag_operations")
