"""Media analysis, transcripts and the AI stage: an image's main colours (a palette card's are
read from its content), an audio or video file's duration, an audio file's waveform, a video's scrub
strip (its layout, and the stored sprite's key), the text a link's page or a document holds
(the AI stage's input beside the card's own; read with the card only), where the transcript
came from, and which engine wrote the AI summary and tags. Cards saved before (outside Trash)
get their ``ai`` stage, pending since the epoch: the workers' sweeper sends them, a few hundred at
a time (an image's colours come with a refresh).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_COLUMNS = (
    ("colors", sa.JSON),
    ("duration_ms", sa.BigInteger),
    ("waveform", sa.JSON),
    ("scrub", sa.JSON),
    ("scrub_object", sa.Text),
    ("source_text", sa.Text),
    ("transcript_source", sa.String(16)),
    ("ai_engine", sa.JSON),
)


# The new stages, and the cards that run them (as cardvault.domain.pipeline.processing.stages_for says).
_NEW_STAGES = {"ai": "type IN ('text', 'quote') OR (type = 'link' AND url IS NOT NULL)"}


def upgrade() -> None:
    with op.batch_alter_table("cards") as batch:
        for name, kind in _COLUMNS:
            batch.add_column(sa.Column(name, kind))
    for stage, which in _NEW_STAGES.items():
        op.execute(
            sa.text(
                "INSERT INTO card_stages (card_pk, stage, state, attempts, updated_at) "
                f"SELECT pk, :stage, 'pending', 0, 0 FROM cards WHERE ({which}) AND deleted_at IS NULL"
            ).bindparams(stage=stage)
        )


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM card_stages WHERE stage = 'ai'"))
    with op.batch_alter_table("cards") as batch:
        for name, _ in reversed(_COLUMNS):
            batch.drop_column(name)
