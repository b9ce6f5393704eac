"""Imports within bounds: each account counts the cards it holds (``cards_held``, moved with
every card made or deleted for good, so the cap on cards reads one row); an import's stages
wait in the table for their account's turn (``turn_account_id`` set, ``turn_at`` NULL) and are
sent a few per account at a time, the accounts in turn (``import_turns``: those with stages
waiting, the least recently served first); ended imports are found by their end for the purge.

Revision ID: 0029
Revises: 0028
"""

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_WAITING = sa.text("turn_account_id IS NOT NULL AND turn_at IS NULL")
_IN_FLIGHT = sa.text("turn_at IS NOT NULL AND state IN ('pending', 'running')")


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN on both databases (no copy of the accounts table on SQLite, whose
    # drop would cascade to every card).
    op.add_column("accounts", sa.Column("cards_held", sa.BigInteger, nullable=False, server_default="0"))
    op.execute(
        "UPDATE accounts SET cards_held = (SELECT COUNT(*) FROM cards WHERE cards.account_id = accounts.id)"
    )
    op.add_column("card_stages", sa.Column("turn_account_id", sa.String(64), nullable=True))
    op.add_column("card_stages", sa.Column("turn_at", sa.BigInteger, nullable=True))
    op.create_index(
        "ix_card_stages_waiting",
        "card_stages",
        ["turn_account_id", "card_pk"],
        postgresql_where=_WAITING,
        sqlite_where=_WAITING,
    )
    op.create_index(
        "ix_card_stages_in_flight",
        "card_stages",
        ["turn_account_id"],
        postgresql_where=_IN_FLIGHT,
        sqlite_where=_IN_FLIGHT,
    )
    op.create_table(
        "import_turns",
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("served_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("account_id", name="pk_import_turns"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_import_turns_account_id_accounts"
        ),
    )
    op.create_index("ix_import_turns_served_at", "import_turns", ["served_at"])
    op.create_index("ix_import_jobs_completed_at", "import_jobs", ["completed_at"])


def downgrade() -> None:
    op.drop_index("ix_import_jobs_completed_at", table_name="import_jobs")
    op.drop_table("import_turns")
    op.drop_index("ix_card_stages_in_flight", table_name="card_stages")
    op.drop_index("ix_card_stages_waiting", table_name="card_stages")
    op.drop_column("card_stages", "turn_at")
    op.drop_column("card_stages", "turn_account_id")
    op.drop_column("accounts", "cards_held")
