"""Webhooks: endpoints and their deliveries; the changes feed marks when a resource was created
and when its processing settled (so an endpoint is told card.created or card.processed), and
its counters count each account's enabled endpoints (a change is announced only where one is).

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def _account() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "account_id", sa.String(64), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    with op.batch_alter_table("changes") as batch:
        batch.add_column(sa.Column("created_sequence", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("processed_sequence", sa.BigInteger, nullable=False, server_default="0"))
    with op.batch_alter_table("change_counters") as batch:
        batch.add_column(sa.Column("webhooks", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "webhooks",
        sa.Column("id", sa.String(64), primary_key=True),
        _account(),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("events", sa.JSON, nullable=False),
        sa.Column("description", sa.String(200), nullable=False),
        sa.Column("secret", sa.String(128), nullable=False),
        sa.Column("previous_secret", sa.String(128)),
        sa.Column("previous_until", sa.BigInteger),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("disabled_reason", sa.String(32)),
        sa.Column("disabled_at", sa.BigInteger),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("paused_until", sa.BigInteger),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_webhooks_account_id", "webhooks", ["account_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "webhook_id", sa.String(64), sa.ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False
        ),
        _account(),
        sa.Column("event", sa.String(48), nullable=False),
        sa.Column("sequence", sa.BigInteger),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger),
        sa.Column("manual", sa.Boolean, nullable=False),
        sa.Column("lease", sa.String(32)),
        sa.Column("lease_until", sa.BigInteger),
        sa.Column("log", sa.JSON, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_webhook_deliveries_endpoint", "webhook_deliveries", ["webhook_id", "created_at", "id"]
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_due", "webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_endpoint", "webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhooks_account_id", "webhooks")
    op.drop_table("webhooks")
    with op.batch_alter_table("change_counters") as batch:
        batch.drop_column("webhooks")
    with op.batch_alter_table("changes") as batch:
        batch.drop_column("processed_sequence")
        batch.drop_column("created_sequence")
