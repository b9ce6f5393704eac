"""Triggers that doom a card's stored objects (shared by the migrations that add one)."""

from alembic import op


def doom_objects_of(columns: tuple[str, ...], new_column: str | None, dropped: str | None = None) -> None:
    """(Re)create the triggers that doom the objects of ``columns`` when their card is deleted or
    the column changes. On PostgreSQL one function covers every column; on SQLite each column
    has its own two triggers: ``new_column``'s are created, or ``dropped``'s dropped."""
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        if dropped is not None:
            for name in ("deleted", "replaced"):
                op.execute(f"DROP TRIGGER cards_{dropped}_{name}")
        if new_column is None:
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
