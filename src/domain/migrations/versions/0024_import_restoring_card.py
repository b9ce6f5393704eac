"""An import of our own archive remembers the card its current entry made until the card is
whole, so a run after a killed one removes a half-made card before it restores the entry anew.

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("import_jobs", sa.Column("restoring_card_id", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("import_jobs", "restoring_card_id")
