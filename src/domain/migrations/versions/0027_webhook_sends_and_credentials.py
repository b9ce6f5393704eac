"""Webhooks: the batch an endpoint is being sent (so an account's endpoints sent to at once can
be counted and capped), and the credential that made it (revoking it disables the endpoint).

Revision ID: 0027
Revises: 0026
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhooks") as table:
        table.add_column(sa.Column("sending_lease", sa.String(32), nullable=True))
        table.add_column(sa.Column("sending_until", sa.BigInteger, nullable=True))
        table.add_column(sa.Column("credential_id", sa.String(64), nullable=True))
    op.create_index("ix_webhooks_credential_id", "webhooks", ["credential_id"])


def downgrade() -> None:
    op.drop_index("ix_webhooks_credential_id", table_name="webhooks")
    with op.batch_alter_table("webhooks") as table:
        table.drop_column("credential_id")
        table.drop_column("sending_until")
        table.drop_column("sending_lease")
