"""Storage quotas from counters: each account keeps the bytes its uploads no card has taken yet
declare (``pending_upload_bytes``) and the bytes its cards' files hold (``stored_file_bytes``),
moved with every change to those rows, so the check at a new upload reads one row instead of
summing the account's cards and uploads (176 ms for an account of 1,000,000 cards, under its
row lock). They start as those sums; the index of pending uploads 0014 made for its sum goes,
nothing else reads by it.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_PENDING = sa.text("attached_at IS NULL")


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN on both databases (no copy of the table on SQLite, whose drop of
    # the old accounts table would cascade to every card).
    for column in ("pending_upload_bytes", "stored_file_bytes"):
        op.add_column("accounts", sa.Column(column, sa.BigInteger, nullable=False, server_default="0"))
    op.execute(
        "UPDATE accounts SET"
        " pending_upload_bytes = (SELECT COALESCE(SUM(declared_size), 0) FROM uploads"
        "  WHERE uploads.account_id = accounts.id AND uploads.attached_at IS NULL),"
        " stored_file_bytes = (SELECT COALESCE(SUM(file_size), 0) FROM cards"
        "  WHERE cards.account_id = accounts.id)"
    )
    op.drop_index("ix_uploads_pending", table_name="uploads")


def downgrade() -> None:
    op.create_index(
        "ix_uploads_pending", "uploads", ["account_id"], postgresql_where=_PENDING, sqlite_where=_PENDING
    )
    # ALTER TABLE, never SQLite's copy of the table (see upgrade).
    for column in ("stored_file_bytes", "pending_upload_bytes"):
        op.drop_column("accounts", column)
