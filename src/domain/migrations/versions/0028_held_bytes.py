"""Every stored byte counts toward the account's stored-files quota: each card keeps what its
objects beyond its own file hold (its caption file, its image and renditions, its capture's
screenshot, archive and reader view): each one's bytes by its column (``held_sizes``) and their
sum (``held_bytes``), and ``accounts.stored_file_bytes`` counts them beside the cards' files.

Existing cards start with the sizes their rows know (a caption file's, a capture's archive and
reader view); a migration cannot read the blob store, so pictures made before count from the
next write that replaces them. The accounts' stored bytes are summed again from the cards.

Revision ID: 0028
Revises: 0027
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

_BATCH = 1000


def upgrade() -> None:
    # Plain ALTER TABLE on both databases: SQLite's batch mode copies the table, and its
    # triggers (the doomed objects') do not survive the copy.
    op.add_column("cards", sa.Column("held_sizes", sa.JSON, nullable=True))
    op.add_column("cards", sa.Column("held_bytes", sa.BigInteger, nullable=False, server_default="0"))
    cards = sa.table(
        "cards",
        sa.column("pk", sa.Integer),
        sa.column("captions_object", sa.Text),
        sa.column("captions", sa.JSON),
        sa.column("archive_object", sa.Text),
        sa.column("reader_object", sa.Text),
        sa.column("capture", sa.JSON),
        sa.column("held_sizes", sa.JSON),
        sa.column("held_bytes", sa.BigInteger),
    )
    connection = op.get_bind()
    after = 0
    while True:
        rows = connection.execute(
            sa.select(cards.c.pk, cards.c.captions_object, cards.c.captions, cards.c.archive_object)
            .add_columns(cards.c.reader_object, cards.c.capture)
            .where(cards.c.pk > after)
            .where(cards.c.captions_object.is_not(None) | cards.c.capture.is_not(None))
            .order_by(cards.c.pk)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        held = [{"card_pk": row[0], "sizes": _known_sizes(*row[1:])} for row in rows]
        connection.execute(
            cards.update()
            .where(cards.c.pk == sa.bindparam("card_pk"))
            .values(held_sizes=sa.bindparam("sizes"), held_bytes=sa.bindparam("total")),
            [{**one, "total": sum(one["sizes"].values())} for one in held],
        )
        after = rows[-1][0]
    op.execute(
        "UPDATE accounts SET stored_file_bytes ="
        " (SELECT COALESCE(SUM(COALESCE(file_size, 0) + held_bytes), 0)"
        " FROM cards WHERE cards.account_id = accounts.id)"
    )


def _known_sizes(
    captions_object: str | None,
    captions: object,
    archive_object: str | None,
    reader_object: str | None,
    capture: object,
) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for column, key, facts in (
        ("captions_object", captions_object, captions),
        (
            "archive_object",
            archive_object,
            (capture or {}).get("archive") if isinstance(capture, dict) else None,
        ),
        (
            "reader_object",
            reader_object,
            (capture or {}).get("reader") if isinstance(capture, dict) else None,
        ),
    ):
        size = facts.get("size") if isinstance(facts, dict) else None
        if key is not None and isinstance(size, int) and size > 0:
            sizes[column] = size
    return sizes


def downgrade() -> None:
    op.execute(
        "UPDATE accounts SET stored_file_bytes = (SELECT COALESCE(SUM(file_size), 0)"
        " FROM cards WHERE cards.account_id = accounts.id)"
    )
    # ALTER TABLE, never SQLite's copy of the table (see upgrade).
    op.drop_column("cards", "held_bytes")
    op.drop_column("cards", "held_sizes")
