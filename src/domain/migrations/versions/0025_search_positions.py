"""Search people expect: the full-text index keeps each word's positions (phrases) and tells a
card's headline (title and notes, beside its tags) from its body (relevance tiers); cards keep
their link's host, reversed, for ``site:`` (cardvault.domain.search). Every card is indexed
again here, a batch at a time.

PostgreSQL: card_search is rebuilt as a new table (part 0 body, 3 headline, 1 and 2 the tag
rows, now with positions from the triggers) and takes the old one's name, with a partial GIN
index of the parts that are not the body. SQLite: card_search becomes an FTS5 table of the
columns ``headline`` and ``body``; card_tag_search keeps a card's tags apart by a gap token.

Revision ID: 0025
Revises: 0024
"""

from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

from cardvault.domain.cards.urls import url_site
from cardvault.domain.search.index import GAP, fts_text, title_of, tsvector, word_runs

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_BATCH = 2000
_SITED = sa.text("url_site IS NOT NULL")
_TEXTS = (
    "type",
    "metadata_title",
    "notes",
    "content",
    "url",
    "metadata_description",
    "ai_summary",
    "ai_transcript",
)

# A tag row's words (folded, space-delimited) as a tsvector with positions.
_TAG_VECTOR = (
    "(SELECT string_agg(quote_literal(w) || ':' || n, ' ')::tsvector "
    "FROM unnest(string_to_array(btrim({words}), ' ')) WITH ORDINALITY AS t(w, n))"
)
_OLD_TAG_VECTOR = "array_to_tsvector(string_to_array(btrim({words}), ' '))"
_TAG_ROWS = (
    "SELECT card_pk, CASE kind WHEN ''user'' THEN 1 ELSE 2 END AS part, name_key AS tag_key, "
    "{vector} AS words FROM {rows} WHERE btrim(words) <> ''''"
)
_ADD_FUNCTIONS = {
    "insert": "card_search_tags_insert",
    "update": "card_search_tags_update",
}
_REMOVE = (
    "DELETE FROM card_search s USING {rows} t WHERE s.card_pk = t.card_pk "
    "AND s.part = CASE t.kind WHEN ''user'' THEN 1 ELSE 2 END AND s.tag_key = t.name_key"
)


def _functions(vector: str) -> None:
    """Replace the tag triggers' functions (migration 0004) so tag rows get ``vector``."""
    add = "INSERT INTO card_search (card_pk, part, tag_key, words) " + _TAG_ROWS
    bodies = {
        "insert": [add.format(rows="new_rows", vector=vector.format(words="words").replace("'", "''"))],
        "update": [
            _REMOVE.format(rows="old_rows"),
            add.format(rows="new_rows", vector=vector.format(words="words").replace("'", "''")),
        ],
    }
    for event, statements in bodies.items():
        body = "".join(f"    EXECUTE '{statement}';\n" for statement in statements)
        op.execute(
            f"CREATE OR REPLACE FUNCTION card_search_tags_{event}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN\n{body}    RETURN NULL;\nEND $$"
        )
    # Replacing a function drops its settings: the update trigger's plan cost (migration 0005).
    op.execute("ALTER FUNCTION card_search_tags_update() SET random_page_cost = 1.1")


def _cards(connection: Any) -> Iterator[list[Any]]:
    """Every card's pk and texts, a batch at a time."""
    cards = sa.table("cards", sa.column("pk", sa.Integer), *(sa.column(name) for name in _TEXTS))
    after = 0
    while True:
        rows = connection.execute(
            sa.select(cards.c.pk, *(cards.c[name] for name in _TEXTS))
            .where(cards.c.pk > after)
            .order_by(cards.c.pk)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def upgrade() -> None:
    connection = op.get_bind()
    sqlite = connection.dialect.name == "sqlite"
    # Compared by bytes ("." before "/": a site's keys are one range), whatever the database's
    # collation; SQLite compares bytes already.
    site_type = sa.String(256) if sqlite else sa.String(256, collation="C")
    op.add_column("cards", sa.Column("url_site", site_type, nullable=True))
    cards = sa.table("cards", sa.column("pk", sa.Integer), sa.column("url_site"))
    if sqlite:
        op.execute("DROP TABLE card_search")
        op.execute(
            "CREATE VIRTUAL TABLE card_search "
            "USING fts5(headline, body, tokenize = 'unicode61 remove_diacritics 0')"
        )
        _gapped_tag_words(f" {GAP} ")
    else:
        op.execute("SET LOCAL work_mem = '256MB'")
        op.execute("SET LOCAL maintenance_work_mem = '256MB'")
        _functions(_TAG_VECTOR)
        op.execute(
            "CREATE TABLE card_search_new (card_pk BIGINT NOT NULL, part SMALLINT NOT NULL DEFAULT 0, "
            "tag_key VARCHAR(256) NOT NULL DEFAULT '', words TSVECTOR NOT NULL)"
        )
        op.execute(
            "INSERT INTO card_search_new (card_pk, part, tag_key, words) "
            + _TAG_ROWS.replace("''", "'").format(rows="card_tags", vector=_TAG_VECTOR.format(words="words"))
        )
    search = sa.table(
        "card_search" if sqlite else "card_search_new",
        sa.column("rowid"),
        sa.column("headline"),
        sa.column("body"),
        sa.column("card_pk"),
        sa.column("part"),
        sa.column("words"),
    )
    for rows in _cards(connection):
        sites = [{"card_pk": row[0], "site": url_site(row[5])} for row in rows if row[5] is not None]
        if sites:
            connection.execute(
                cards.update()
                .where(cards.c.pk == sa.bindparam("card_pk"))
                .values(url_site=sa.bindparam("site")),
                sites,
            )
        entries = []
        for pk, card_type, title, notes, *body in rows:
            headline, texts = word_runs([title_of(card_type, title, body[0]), notes]), word_runs(body)
            if sqlite:
                entries.append({"rowid": pk, "headline": fts_text(headline), "body": fts_text(texts)})
                continue
            for part, runs in ((0, texts), (3, headline)):
                vector = tsvector(runs)
                if vector is not None:
                    entries.append({"card_pk": pk, "part": part, "words": vector})
        if entries and sqlite:
            connection.execute(search.insert(), entries)
        elif entries:
            connection.execute(
                sa.text(
                    "INSERT INTO card_search_new (card_pk, part, words) "
                    "VALUES (:card_pk, :part, CAST(:words AS tsvector))"
                ),
                entries,
            )
    if not sqlite:
        op.execute("DROP TABLE card_search")
        op.execute("ALTER TABLE card_search_new RENAME TO card_search")
        op.execute(
            "ALTER TABLE card_search ADD CONSTRAINT pk_card_search PRIMARY KEY (card_pk, part, tag_key)"
        )
        op.execute(
            "ALTER TABLE card_search ADD CONSTRAINT fk_card_search_card_pk_cards "
            "FOREIGN KEY (card_pk) REFERENCES cards (pk) ON DELETE CASCADE"
        )
        op.execute("CREATE INDEX ix_card_search_words ON card_search USING gin (words)")
        op.execute("CREATE INDEX ix_card_search_headline ON card_search USING gin (words) WHERE part > 0")
        op.execute("ANALYZE card_search")
    op.create_index(
        "ix_cards_account_site",
        "cards",
        ["account_id", "url_site"],
        postgresql_where=_SITED,
        sqlite_where=_SITED,
    )


def _gapped_tag_words(separator: str) -> None:
    """SQLite: card_tag_search's triggers (migration 0004) join a card's tags with ``separator``,
    and every card's row is made again."""
    rebuild = (
        "DELETE FROM card_tag_search WHERE rowid = {card}; "
        "INSERT INTO card_tag_search (rowid, words) SELECT {card}, group_concat(words, '{separator}') "
        "FROM card_tags WHERE card_pk = {card} HAVING count(*) > 0; "
    )
    for event, rows in (("insert", ["new"]), ("delete", ["old"]), ("update", ["old", "new"])):
        op.execute(f"DROP TRIGGER card_tags_search_{event}")
        rebuilds = "".join(rebuild.format(card=f"{row}.card_pk", separator=separator) for row in rows)
        op.execute(
            f"CREATE TRIGGER card_tags_search_{event} AFTER {event.upper()} ON card_tags BEGIN {rebuilds}END"
        )
    op.execute("DELETE FROM card_tag_search")
    op.execute(
        "INSERT INTO card_tag_search (rowid, words) "
        f"SELECT card_pk, group_concat(words, '{separator}') FROM card_tags GROUP BY card_pk"
    )


def downgrade() -> None:
    op.drop_index("ix_cards_account_site", "cards")
    op.drop_column("cards", "url_site")
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE card_search_old "
            "USING fts5(words, tokenize = 'unicode61 remove_diacritics 0')"
        )
        op.execute(
            "INSERT INTO card_search_old (rowid, words) "
            f"SELECT rowid, replace(headline || ' ' || body, '{GAP}', ' ') FROM card_search"
        )
        op.execute("DROP TABLE card_search")
        op.execute("ALTER TABLE card_search_old RENAME TO card_search")
        _gapped_tag_words(" ")
        return
    _functions(_OLD_TAG_VECTOR)
    op.execute("DROP INDEX ix_card_search_headline")
    # Part 0 holds every text's words again (without positions); the headline's join it.
    op.execute(
        "INSERT INTO card_search (card_pk, part, tag_key, words) "
        "SELECT card_pk, 0, '', words FROM card_search h WHERE part = 3 "
        "ON CONFLICT (card_pk, part, tag_key) DO UPDATE SET words = card_search.words || EXCLUDED.words"
    )
    op.execute("DELETE FROM card_search WHERE part = 3")
    op.execute("UPDATE card_search SET words = strip(words)")
