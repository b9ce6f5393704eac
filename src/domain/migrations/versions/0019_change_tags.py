"""The changes feed records tags too, by their folded name (up to 256 characters): its
resource ids widen from 64 characters to 256.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("changes") as batch:
        batch.alter_column(
            "resource_id", type_=sa.String(256), existing_type=sa.String(64), existing_nullable=False
        )


def downgrade() -> None:
    op.execute("DELETE FROM changes WHERE kind = 'tag'")
    with op.batch_alter_table("changes") as batch:
        batch.alter_column(
            "resource_id", type_=sa.String(64), existing_type=sa.String(256), existing_nullable=False
        )
