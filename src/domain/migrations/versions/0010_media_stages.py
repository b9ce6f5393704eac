"""The media stages: audio, video and document cards saved before (outside Trash) get ``media``
(and audio and video ``transcript``) and ``ai``, pending since the epoch: the workers' sweeper
sends them, a few hundred at a time. A video's scrub strip (``scrub_object``) is doomed with its
card, or when it is replaced, like the card's other objects (migration 0007).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

from cardvault.domain.migrations.doomed import doom_objects_of

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The new stages, and the cards that run them (as cardvault.domain.pipeline.processing.stages_for says).
_NEW_STAGES = {
    "media": "type IN ('audio', 'video', 'document')",
    "transcript": "type IN ('audio', 'video')",
    "ai": "type IN ('audio', 'video', 'document')",
}


_OBJECT_COLUMNS = ("file_object", "compact_object", "placeholder_object", "thumbnail_object", "scrub_object")


def upgrade() -> None:
    doom_objects_of(_OBJECT_COLUMNS, new_column="scrub_object")
    for stage, which in _NEW_STAGES.items():
        op.execute(
            sa.text(
                "INSERT INTO card_stages (card_pk, stage, state, attempts, updated_at) "
                f"SELECT pk, :stage, 'pending', 0, 0 FROM cards WHERE ({which}) "
                "AND file_object IS NOT NULL AND deleted_at IS NULL"
            ).bindparams(stage=stage)
        )


def downgrade() -> None:
    doom_objects_of(_OBJECT_COLUMNS[:-1], new_column=None, dropped="scrub_object")
    op.execute(
        sa.text(
            "DELETE FROM card_stages WHERE stage IN ('media', 'transcript', 'ai') "
            "AND card_pk IN (SELECT pk FROM cards WHERE type IN ('audio', 'video', 'document'))"
        )
    )
