"""Import jobs: another service's export taken into an account by a worker, a batch of entries
at a time (cardvault.domain.portability.imports.jobs).

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "import_jobs",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("active_account_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("format", sa.String(32), nullable=False),
        sa.Column("on_duplicate", sa.String(8), nullable=False),
        sa.Column("file_name", sa.String(255), nullable=False),
        sa.Column("file_size", sa.BigInteger, nullable=False),
        sa.Column("object_key", sa.Text, nullable=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("found", sa.Integer, nullable=False),
        sa.Column("created", sa.Integer, nullable=False),
        sa.Column("merged", sa.Integer, nullable=False),
        sa.Column("skipped", sa.Integer, nullable=False),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("failures", sa.JSON, nullable=False),
        sa.Column("unmapped", sa.JSON, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease", sa.String(32), nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger, nullable=False),
        sa.Column("completed_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_import_jobs"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_import_jobs_account_id_accounts"
        ),
        # One pending or running import per account, decided by the database (as exports).
        sa.UniqueConstraint("active_account_id", name="uq_import_jobs_active_account_id"),
    )
    op.create_index("ix_import_jobs_account_created", "import_jobs", ["account_id", "created_at"])
    op.create_index("ix_import_jobs_status_heartbeat", "import_jobs", ["status", "heartbeat_at"])


def downgrade() -> None:
    op.drop_table("import_jobs")
