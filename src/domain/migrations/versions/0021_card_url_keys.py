"""Cards are found by their page: each card with a URL keeps the key of its URL's normal form
(cardvault.domain.cards.urls), indexed per account, for listCards' ``url`` filter and an
import's duplicates. Existing cards get theirs here, a batch at a time.

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

from cardvault.domain.cards.urls import url_key

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_BATCH = 1000
_KEYED = sa.text("url_key IS NOT NULL")


def upgrade() -> None:
    # Plain ALTER TABLE on both databases: SQLite's batch mode copies the table, and its
    # triggers (the doomed objects') do not survive the copy.
    op.add_column("cards", sa.Column("url_key", sa.String(32), nullable=True))
    cards = sa.table("cards", sa.column("pk", sa.Integer), sa.column("url", sa.Text), sa.column("url_key"))
    connection = op.get_bind()
    after = 0
    while True:
        rows = connection.execute(
            sa.select(cards.c.pk, cards.c.url)
            .where(cards.c.pk > after, cards.c.url.is_not(None))
            .order_by(cards.c.pk)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        keyed = [{"card_pk": pk, "key": url_key(url)} for pk, url in rows]
        connection.execute(
            cards.update().where(cards.c.pk == sa.bindparam("card_pk")).values(url_key=sa.bindparam("key")),
            keyed,
        )
        after = rows[-1][0]
    op.create_index(
        "ix_cards_account_url",
        "cards",
        ["account_id", "url_key"],
        postgresql_where=_KEYED,
        sqlite_where=_KEYED,
    )


def downgrade() -> None:
    op.drop_index("ix_cards_account_url", "cards")
    op.drop_column("cards", "url_key")
