"""Text in pictures (the ``ocr`` stage): a card's ``file_text`` (the words read in its image, its
scanned PDF's pages or its link's screenshot) and ``ocr_facts`` (the engine and languages that
read them, and how many pages). Existing cards get the stage on their next refresh.

Revision ID: 0036
Revises: 0035
"""

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

_COLUMNS = (("file_text", sa.Text), ("ocr_facts", sa.JSON))


def upgrade() -> None:
    with op.batch_alter_table("cards") as batch:
        for name, kind in _COLUMNS:
            batch.add_column(sa.Column(name, kind))


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (as 0011): a batch would rebuild the table on SQLite.
    for name, _ in reversed(_COLUMNS):
        op.drop_column("cards", name)
