"""Link metadata and the pipeline's leases: what a link's page says (one JSON document per card,
read only with the card), and the lease of each stage's running attempt, so that an attempt
the sweeper gave up on, or that a refresh replaced, cannot record its result. The link cards
saved before (outside Trash) get their link stages, pending since the epoch: the workers'
sweeper sends them, a few hundred at a time.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("cards") as batch:
        batch.add_column(sa.Column("link_meta", sa.JSON))
    with op.batch_alter_table("card_stages") as batch:
        batch.add_column(sa.Column("lease", sa.String(32)))
    for stage in ("linkMetadata", "linkPreview"):
        op.execute(
            sa.text(
                "INSERT INTO card_stages (card_pk, stage, state, attempts, updated_at) "
                "SELECT pk, :stage, 'pending', 0, 0 FROM cards "
                "WHERE type = 'link' AND url IS NOT NULL AND deleted_at IS NULL"
            ).bindparams(stage=stage)
        )


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM card_stages WHERE stage IN ('linkMetadata', 'linkPreview')"))
    with op.batch_alter_table("card_stages") as batch:
        batch.drop_column("lease")
    with op.batch_alter_table("cards") as batch:
        batch.drop_column("link_meta")
