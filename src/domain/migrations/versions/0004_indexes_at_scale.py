"""Lists and search at a million cards: tag and folder rows carry their card's createdAt (so a
tag's or folder's cards are read in list order from an index), tag words in a full-text index,
Trash indexes that only hold cards in Trash, and tag counts kept as tags change (counted here
once from the tag rows).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# PostgreSQL: card_search also holds the words of each tag row (part 1: a tag, part 2: an AI
# tag; tag_key: its name_key), kept by statement triggers on card_tags, so one table answers a
# word and the planner can estimate it (over a UNION of two indexes it assumed 200 matches and
# joined 235,000 cards for a common word). A row per tag row, not per card, so renaming a tag
# rewrites only that tag's words. The statements run through EXECUTE: a plan cached by the
# connection for one transition table would serve every later size badly.
_TAG_ROWS = (
    "SELECT card_pk, CASE kind WHEN ''user'' THEN 1 ELSE 2 END AS part, name_key AS tag_key, "
    "array_to_tsvector(string_to_array(btrim(words), '' '')) AS words FROM {rows} WHERE btrim(words) <> ''''"
)
_REMOVE = (
    "DELETE FROM card_search s USING {rows} t WHERE s.card_pk = t.card_pk "
    "AND s.part = CASE t.kind WHEN ''user'' THEN 1 ELSE 2 END AND s.tag_key = t.name_key"
)
_ADD = "INSERT INTO card_search (card_pk, part, tag_key, words) " + _TAG_ROWS
_FUNCTION = """
CREATE FUNCTION card_search_tags_{event}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{body}    RETURN NULL;
END $$
"""
_TRIGGER = (
    "CREATE TRIGGER card_search_tags_{event} AFTER {verb} ON card_tags "
    "REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION card_search_tags_{event}()"
)
_EVENTS = {
    "insert": ("INSERT", "NEW TABLE AS new_rows", [_ADD.format(rows="new_rows")]),
    "delete": ("DELETE", "OLD TABLE AS old_rows", [_REMOVE.format(rows="old_rows")]),
    "update": (
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        [_REMOVE.format(rows="old_rows"), _ADD.format(rows="new_rows")],
    ),
}


_SQLITE_REBUILD = (
    "DELETE FROM card_tag_search WHERE rowid = {card}; "
    "INSERT INTO card_tag_search (rowid, words) SELECT {card}, group_concat(words, ' ') "
    "FROM card_tags WHERE card_pk = {card} HAVING count(*) > 0; "
)


def upgrade() -> None:
    _created_at_copies()  # first: the tag-row triggers below would rebuild every card's tag words
    # Trash indexes hold only cards in Trash (about 1%): a full index on deleted_at invited
    # SQLite, once it had statistics, to read every live card through it and sort them (the
    # first page went from 37 ms to 242 ms at 100k cards).
    op.drop_index("ix_cards_deleted_at", "cards")
    op.execute("CREATE INDEX ix_cards_deleted_at ON cards (deleted_at) WHERE deleted_at IS NOT NULL")
    op.execute(
        "CREATE INDEX ix_cards_account_trash ON cards (account_id, deleted_at, pk) "
        "WHERE deleted_at IS NOT NULL"
    )
    if op.get_bind().dialect.name == "sqlite":
        # SQLite: the words of each card's tags in an FTS5 table of their own, one row per card
        # keyed by its pk (which, unlike the hidden rowid of card_tags, VACUUM never changes),
        # rebuilt by triggers whenever a tag row of the card changes.
        op.execute(
            "CREATE VIRTUAL TABLE card_tag_search "
            "USING fts5(words, tokenize = 'unicode61 remove_diacritics 0')"
        )
        for event, cards in (("insert", ["new"]), ("delete", ["old"]), ("update", ["old", "new"])):
            rebuilds = "".join(_SQLITE_REBUILD.format(card=f"{row}.card_pk") for row in cards)
            op.execute(
                f"CREATE TRIGGER card_tags_search_{event} AFTER {event.upper()} ON card_tags "
                f"BEGIN {rebuilds}END"
            )
        op.execute(
            "INSERT INTO card_tag_search (rowid, words) "
            "SELECT card_pk, group_concat(words, ' ') FROM card_tags GROUP BY card_pk"
        )
    else:
        _tag_words_in_card_search()
    _tag_counts()


def _created_at_copies() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if not sqlite:
        # Sorts and index builds of millions of rows in memory; rewriting every tag row without
        # its two indexes and building them after took a third of the time.
        op.execute("SET LOCAL work_mem = '256MB'")
        op.execute("SET LOCAL maintenance_work_mem = '256MB'")
        op.drop_index("ix_card_tags_account_key", "card_tags")
        op.execute("ALTER TABLE card_tags DROP CONSTRAINT pk_card_tags")
    for table in ("card_tags", "folder_cards"):
        # A default lets SQLite add a NOT NULL column; every row gets its real value next.
        op.execute(f"ALTER TABLE {table} ADD COLUMN card_created_at BIGINT NOT NULL DEFAULT 0")
        created = (
            f"(SELECT created_at FROM cards WHERE cards.pk = {table}.card_pk)"
            if sqlite
            else f"cards.created_at FROM cards WHERE cards.pk = {table}.card_pk"
        )
        op.execute(f"UPDATE {table} SET card_created_at = {created}")
        if not sqlite:  # every writer sets it (SQLite cannot drop a column default)
            op.execute(f"ALTER TABLE {table} ALTER COLUMN card_created_at DROP DEFAULT")
    if not sqlite:
        op.execute("ALTER TABLE card_tags ADD CONSTRAINT pk_card_tags PRIMARY KEY (card_pk, kind, name_key)")
        op.create_index("ix_card_tags_account_key", "card_tags", ["account_id", "name_key", "card_pk"])
    op.create_index(
        "ix_card_tags_account_key_created",
        "card_tags",
        ["account_id", "name_key", "card_created_at", "card_pk"],
    )
    op.create_index(
        "ix_folder_cards_folder_created", "folder_cards", ["folder_id", "card_created_at", "card_pk"]
    )


def _tag_words_in_card_search() -> None:
    op.execute("ALTER TABLE card_search ADD COLUMN part smallint NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE card_search ADD COLUMN tag_key varchar(256) NOT NULL DEFAULT ''")
    op.execute("ALTER TABLE card_search DROP CONSTRAINT pk_card_search")
    # Building the indexes once after the rows are in, and checking the foreign key in one join,
    # is much faster than doing either row by row.
    op.execute("DROP INDEX ix_card_search_words")
    op.execute("ALTER TABLE card_search DROP CONSTRAINT fk_card_search_card_pk_cards")
    op.execute(_ADD.format(rows="card_tags").replace("''", "'"))
    op.execute("ALTER TABLE card_search ADD CONSTRAINT pk_card_search PRIMARY KEY (card_pk, part, tag_key)")
    op.execute(
        "ALTER TABLE card_search ADD CONSTRAINT fk_card_search_card_pk_cards "
        "FOREIGN KEY (card_pk) REFERENCES cards (pk) ON DELETE CASCADE"
    )
    op.execute("CREATE INDEX ix_card_search_words ON card_search USING gin (words)")
    for event, (verb, tables, statements) in _EVENTS.items():
        body = "".join(f"    EXECUTE '{statement}';\n" for statement in statements)
        op.execute(_FUNCTION.format(event=event, body=body))
        op.execute(_TRIGGER.format(event=event, verb=verb, tables=tables))


def _tag_counts() -> None:
    op.create_table(
        "tag_counters",
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("name_key", sa.String(256), nullable=False),
        sa.Column("cards", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("account_id", "name_key", name="pk_tag_counters"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_tag_counters_account_id_accounts"
        ),
    )
    op.execute(
        "CREATE INDEX ix_tag_counters_account_cards ON tag_counters (account_id, cards DESC, name_key)"
    )
    op.create_table(
        "tag_spellings",
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("name_key", sa.String(256), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("uses", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("account_id", "name_key", "name", name="pk_tag_spellings"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_tag_spellings_account_id_accounts"
        ),
    )
    op.execute(
        "INSERT INTO tag_counters (account_id, name_key, cards) "
        "SELECT t.account_id, t.name_key, count(DISTINCT t.card_pk) FROM card_tags t "
        "JOIN cards c ON c.pk = t.card_pk WHERE c.deleted_at IS NULL GROUP BY t.account_id, t.name_key"
    )
    op.execute(
        "INSERT INTO tag_spellings (account_id, name_key, name, uses) "
        "SELECT t.account_id, t.name_key, t.name, count(*) FROM card_tags t "
        "JOIN cards c ON c.pk = t.card_pk WHERE c.deleted_at IS NULL "
        "GROUP BY t.account_id, t.name_key, t.name"
    )


def downgrade() -> None:
    op.drop_table("tag_spellings")
    op.drop_table("tag_counters")
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER card_tags_search_{trigger}")
        op.execute("DROP TABLE card_tag_search")
    else:
        for event in _EVENTS:
            op.execute(f"DROP TRIGGER card_search_tags_{event} ON card_tags")
            op.execute(f"DROP FUNCTION card_search_tags_{event}()")
        op.execute("DELETE FROM card_search WHERE part <> 0")
        op.execute("ALTER TABLE card_search DROP CONSTRAINT pk_card_search")
        op.execute("ALTER TABLE card_search DROP COLUMN part")
        op.execute("ALTER TABLE card_search DROP COLUMN tag_key")
        op.execute("ALTER TABLE card_search ADD CONSTRAINT pk_card_search PRIMARY KEY (card_pk)")
    op.drop_index("ix_cards_account_trash", "cards")
    op.drop_index("ix_cards_deleted_at", "cards")
    op.create_index("ix_cards_deleted_at", "cards", ["deleted_at"])
    op.drop_index("ix_folder_cards_folder_created", "folder_cards")
    op.drop_index("ix_card_tags_account_key_created", "card_tags")
    with op.batch_alter_table("folder_cards") as batch:
        batch.drop_column("card_created_at")
    with op.batch_alter_table("card_tags") as batch:
        batch.drop_column("card_created_at")
