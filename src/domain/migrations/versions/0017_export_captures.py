"""Exports carry link captures: each export item keeps the keys of its card's capture (its
screenshot, archive and reader view) beside its file and caption file.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("export_items") as batch:
        batch.add_column(sa.Column("capture_objects", sa.JSON))


def downgrade() -> None:
    op.drop_column("export_items", "capture_objects")
