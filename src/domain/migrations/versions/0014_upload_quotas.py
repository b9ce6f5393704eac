"""Storage quotas: an index of each account's uploads that no card has taken yet, which the
pending-uploads quota sums at every new upload.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_PENDING = sa.text("attached_at IS NULL")


def upgrade() -> None:
    op.create_index(
        "ix_uploads_pending", "uploads", ["account_id"], postgresql_where=_PENDING, sqlite_where=_PENDING
    )


def downgrade() -> None:
    op.drop_index("ix_uploads_pending", table_name="uploads")
