"""The media stages: audio, video and document cards saved before (outside Trash) get ``media``
(and audio and video ``transcript``) and ``ai``, pending since the epoch: the workers' sweeper
sends them, a few hundred at a time. A video's scrub strip (``scrub_object``) is doomed with its
card, or when it is replaced, like the card's other objects (migration 0007).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The new stages, and the cards that run them (as cardvault.domain.processing.stages_for says).
_NEW_STAGES = {
    "media": "type IN ('audio', 'video', 'document')",
    "transcript": "type IN ('audio', 'video')",
    "ai": "type IN ('audio', 'video', 'document')",
}


_OBJECT_COLUMNS = ("file_object", "compact_object", "placeholder_object", "thumbnail_object", "scrub_object")


def upgrade() -> None:
    _doom_objects_of(_OBJECT_COLUMNS, new_column="scrub_object")
    for stage, which in _NEW_STAGES.items():
        op.execute(
            sa.text(
                "INSERT INTO card_stages (card_pk, stage, state, attempts, updated_at) "
                f"SELECT pk, :stage, 'pending', 0, 0 FROM cards WHERE ({which}) "
                "AND file_object IS NOT NULL AND deleted_at IS NULL"
            ).bindparams(stage=stage)
        )


def _doom_objects_of(columns: tuple[str, ...], new_column: str | None) -> None:
    """(Re)create the triggers that doom the objects of ``columns`` (on SQLite, only the new
    column's: each column has its own)."""
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        if new_column is None:
            for name in ("deleted", "replaced"):
                op.execute(f"DROP TRIGGER cards_scrub_object_{name}")
            return
        now = "CAST(strftime('%s','now') AS INTEGER) * 1000"
        doom = f"INSERT OR IGNORE INTO doomed_objects (key, doomed_at) VALUES (OLD.{new_column}, {now});"
        op.execute(
            f"CREATE TRIGGER cards_{new_column}_deleted AFTER DELETE ON cards "
            f"WHEN OLD.{new_column} IS NOT NULL BEGIN {doom} END"
        )
        op.execute(
            f"CREATE TRIGGER cards_{new_column}_replaced AFTER UPDATE OF {new_column} ON cards "
            f"WHEN OLD.{new_column} IS NOT NULL AND OLD.{new_column} IS NOT NEW.{new_column} BEGIN {doom} END"
        )
        return
    now = "CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)"
    inserts = "\n".join(
        f"  IF OLD.{c} IS NOT NULL AND (TG_OP = 'DELETE' OR OLD.{c} IS DISTINCT FROM NEW.{c}) THEN\n"
        f"    INSERT INTO doomed_objects (key, doomed_at) VALUES (OLD.{c}, {now})\n"
        "      ON CONFLICT (key) DO NOTHING;\n"
        "  END IF;"
        for c in columns
    )
    op.execute("DROP TRIGGER cards_doom_objects ON cards")
    op.execute(
        "CREATE OR REPLACE FUNCTION cards_doom_objects() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n"
        f"{inserts}\n  RETURN NULL;\nEND\n$$"
    )
    op.execute(
        f"CREATE TRIGGER cards_doom_objects AFTER DELETE OR UPDATE OF {', '.join(columns)} ON cards "
        "FOR EACH ROW EXECUTE FUNCTION cards_doom_objects()"
    )


def downgrade() -> None:
    _doom_objects_of(_OBJECT_COLUMNS[:-1], new_column=None)
    op.execute(
        sa.text(
            "DELETE FROM card_stages WHERE stage IN ('media', 'transcript', 'ai') "
            "AND card_pk IN (SELECT pk FROM cards WHERE type IN ('audio', 'video', 'document'))"
        )
    )
