"""Agent clients (cardvault.handlers.web.agents): the resource (RFC 8707) an authorization code
and a grant were asked for, so an access token's audience can be checked; and when a client that
registered itself (RFC 7591) ends unless it is used first, and that it registered itself (for
good: the consent page warns of it).

Revision ID: 0037
Revises: 0036
"""

import sqlalchemy as sa
from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("oauth_codes") as table:
        table.add_column(sa.Column("resource", sa.String(300), nullable=True))
    with op.batch_alter_table("oauth_grants") as table:
        table.add_column(sa.Column("resource", sa.String(300), nullable=True))
    with op.batch_alter_table("oauth_clients") as table:
        table.add_column(sa.Column("expires_at", sa.BigInteger, nullable=True))
        table.add_column(
            sa.Column("registered_dynamically", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.create_index("ix_oauth_clients_expires_at", "oauth_clients", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_oauth_clients_expires_at", "oauth_clients")
    with op.batch_alter_table("oauth_clients") as table:
        table.drop_column("registered_dynamically")
        table.drop_column("expires_at")
    with op.batch_alter_table("oauth_grants") as table:
        table.drop_column("resource")
    with op.batch_alter_table("oauth_codes") as table:
        table.drop_column("resource")
