"""ZIP exports: a job per export (one pending or running per account) and the cards its
snapshot read, with what archiving did with their files.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "export_jobs",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("active_account_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("stage", sa.String(16), nullable=True),
        sa.Column("failure_class", sa.String(32), nullable=True),
        sa.Column("processed_count", sa.Integer, nullable=False),
        sa.Column("card_count", sa.Integer, nullable=True),
        sa.Column("files_included", sa.Integer, nullable=True),
        sa.Column("files_omitted", sa.Integer, nullable=True),
        sa.Column("files_unreadable", sa.Integer, nullable=True),
        sa.Column("size_bytes", sa.BigInteger, nullable=True),
        sa.Column("last_card_pk", sa.BigInteger, nullable=False),
        sa.Column("cursor_pk", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease", sa.String(32), nullable=True),
        sa.Column("object_key", sa.Text, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger, nullable=False),
        sa.Column("completed_at", sa.BigInteger, nullable=True),
        sa.Column("expires_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_export_jobs"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_export_jobs_account_id_accounts"
        ),
        # One pending or running export per account, decided by the database (as tag operations).
        sa.UniqueConstraint("active_account_id", name="uq_export_jobs_active_account_id"),
    )
    op.create_index("ix_export_jobs_account_created", "export_jobs", ["account_id", "created_at"])
    op.create_index("ix_export_jobs_status_heartbeat", "export_jobs", ["status", "heartbeat_at"])
    op.create_table(
        "export_items",
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("card_pk", sa.BigInteger, nullable=False),
        sa.Column("record", sa.JSON, nullable=False),
        sa.Column("file_object", sa.Text, nullable=True),
        sa.Column("captions_object", sa.Text, nullable=True),
        sa.Column("archived", sa.JSON, nullable=True),
        sa.PrimaryKeyConstraint("job_id", "card_pk", name="pk_export_items"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["export_jobs.id"], ondelete="CASCADE", name="fk_export_items_job_id_export_jobs"
        ),
    )


def downgrade() -> None:
    op.drop_table("export_items")
    op.drop_table("export_jobs")
