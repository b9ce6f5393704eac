"""Each card's, folder's and webhook's version (cardvault.domain.versions): an integer every
write raises, behind the resource's strong ETag (conditional requests). Existing rows start at
1, filled in by the column's default as it is added.

Revision ID: 0031
Revises: 0030
"""

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

_TABLES = ("cards", "folders", "webhooks")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("version", sa.BigInteger, nullable=False, server_default="1"))


def downgrade() -> None:
    for table in _TABLES:
        op.drop_column(table, "version")
