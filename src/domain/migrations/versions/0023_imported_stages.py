"""Stages queued by an import: their messages go to the imported queue, behind stages of cards
saved by hand, and those that fetch the card's page take its host's turn
(cardvault.workers.pipeline).

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ALTER TABLE on both databases, with a constant default: no rewrite of the table.
    op.add_column("card_stages", sa.Column("imported", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("card_stages", "imported")
