"""Link capture: a link card's first screen with its 256 px and 48 px renditions, its archive and
its reader view (each an object doomed with its card or when replaced), and what they are
(``capture``). Cards saved before this release are captured when they are refreshed.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

from cardvault.domain.migrations.doomed import doom_objects_of

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_BEFORE = (
    "file_object",
    "compact_object",
    "placeholder_object",
    "thumbnail_object",
    "scrub_object",
    "captions_object",
)
_NEW = (
    "screenshot_object",
    "screenshot_compact_object",
    "screenshot_placeholder_object",
    "archive_object",
    "reader_object",
)


def upgrade() -> None:
    with op.batch_alter_table("cards") as batch:
        for name in _NEW:
            batch.add_column(sa.Column(name, sa.Text))
        batch.add_column(sa.Column("capture", sa.JSON))
    for count, name in enumerate(_NEW, start=1):
        doom_objects_of((*_BEFORE, *_NEW[:count]), new_column=name)


def downgrade() -> None:
    for count, name in reversed(list(enumerate(_NEW, start=1))):
        doom_objects_of((*_BEFORE, *_NEW[: count - 1]), new_column=None, dropped=name)
    # Plain ALTER TABLE ... DROP COLUMN: a batch would rebuild the table on SQLite, and the
    # table's other triggers would go with the old one.
    op.drop_column("cards", "capture")
    for name in reversed(_NEW):
        op.drop_column("cards", name)
