"""Smart folders (cardvault.domain.cards.smart): a folder of kind ``smart`` keeps the query (the
``q`` grammar) whose matches it holds; manual folders keep none.

Revision ID: 0034
Revises: 0033
"""

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("folders") as batch:
        batch.add_column(sa.Column("query", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("folders") as batch:
        batch.drop_column("query")
