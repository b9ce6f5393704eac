"""Caption files: an audio or video card's attached caption file (``captions_object``, doomed
with its card or when replaced), what it is (``captions``: file name, format, size, cue count)
and its cues' text (``captions_text``, the transcript stage's second source).

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

from cardvault.domain.migrations.doomed import doom_objects_of

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_COLUMNS = (("captions_object", sa.Text), ("captions", sa.JSON), ("captions_text", sa.Text))
_OBJECT_COLUMNS = (
    "file_object",
    "compact_object",
    "placeholder_object",
    "thumbnail_object",
    "scrub_object",
    "captions_object",
)


def upgrade() -> None:
    with op.batch_alter_table("cards") as batch:
        for name, kind in _COLUMNS:
            batch.add_column(sa.Column(name, kind))
    doom_objects_of(_OBJECT_COLUMNS, new_column="captions_object")


def downgrade() -> None:
    doom_objects_of(_OBJECT_COLUMNS[:-1], new_column=None, dropped="captions_object")
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35 and newer have it): a batch would rebuild
    # the table on SQLite, and the table's other triggers would go with the old one.
    for name, _ in reversed(_COLUMNS):
        op.drop_column("cards", name)
