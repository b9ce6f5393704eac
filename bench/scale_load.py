"""Load the scale bench's data into a database migrated to BASE_REVISION: COPY on PostgreSQL,
batched inserts on SQLite. The migrations after BASE_REVISION then run on the full tables,
timed, as they would on a production database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import psycopg

from harness.scale_data import Generator, Stats

BASE_REVISION = "0003"  # the schema the data is written in; later migrations run on top, timed
CARD_COLUMNS = [
    "pk",
    "id",
    "account_id",
    "type",
    "content",
    "notes",
    "url",
    "source",
    "file_name",
    "file_size",
    "mime_type",
    "metadata_title",
    "metadata_description",
    "ai_summary",
    "ai_transcript",
    "is_favorited",
    "completed_at",
    "created_at",
    "updated_at",
    "deleted_at",
    "archived_at",
]
TAG_COLUMNS = ["card_pk", "kind", "name_key", "name", "position", "account_id", "words"]
# The data is written in the schema of BASE_REVISION, before card_created_at existed.
FOLDER_COLUMNS = ["id", "account_id", "name", "name_key", "color", "kind", "created_at", "updated_at"]


def _accounts(sizes: list[int]) -> list[tuple[str, int]]:
    return [(f"acc_scale{i:04d}", size) for i, size in enumerate(sizes)]


def _tsvector(words: list[str]) -> str:
    # Words are runs of letters and digits (search.split_words): nothing to escape.
    return " ".join(f"'{word}'" for word in words)


Table = tuple[str, list[str], Iterable[list[Any]]]


def _tables(
    gen: Generator, account_id: str, size: int, stats: Stats | None, *, sqlite: bool
) -> tuple[list[str], list[Table]]:
    """The account's folder ids and its rows, table by table, in an order the keys allow."""
    folders = gen.folders(account_id)
    rows = list(gen.cards(account_id, size, [f["id"] for f in folders], stats))
    search: Table = (
        ("card_search", ["rowid", "words"], ([c["pk"], " ".join(w)] for c, _, _, w in rows))
        if sqlite
        else ("card_search", ["card_pk", "words"], ([c["pk"], _tsvector(w)] for c, _, _, w in rows))
    )
    return [f["id"] for f in folders], [
        ("accounts", ["id", "name", "name_key", "created_at"], [[account_id, account_id, account_id, 0]]),
        ("folders", FOLDER_COLUMNS, ([f[c] for c in FOLDER_COLUMNS] for f in folders)),
        ("cards", CARD_COLUMNS, ([card[c] for c in CARD_COLUMNS] for card, *_ in rows)),
        ("card_tags", TAG_COLUMNS, ([t[c] for c in TAG_COLUMNS] for _, tags, _, _ in rows for t in tags)),
        (
            "folder_cards",
            ["folder_id", "card_pk", "added_at"],
            ([f, card["pk"], card["created_at"]] for card, _, fs, _ in rows for f in fs),
        ),
        search,
    ]


def load_postgresql(url: str, sizes: list[int], gen: Generator, stats: Stats) -> dict[str, Any]:
    """COPY every account's rows; return the big account's id and its folders."""
    big: dict[str, Any] = {}
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        for n, (account_id, size) in enumerate(_accounts(sizes)):
            folders, tables = _tables(gen, account_id, size, stats if n == 0 else None, sqlite=False)
            for table, columns, rows in tables:
                with (
                    conn.cursor() as cursor,
                    cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy,
                ):
                    for row in rows:
                        copy.write_row(row)
            conn.commit()
            big = big or {"account_id": account_id, "folders": folders}
        conn.execute("SELECT setval('cards_pk_seq', (SELECT max(pk) FROM cards))")
        conn.commit()
    return big


def load_sqlite(path: str, sizes: list[int], gen: Generator, stats: Stats) -> dict[str, Any]:
    """Insert every account's rows in one transaction per account."""
    big: dict[str, Any] = {}
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for n, (account_id, size) in enumerate(_accounts(sizes)):
            folders, tables = _tables(gen, account_id, size, stats if n == 0 else None, sqlite=True)
            conn.execute("BEGIN")
            for table, columns, rows in tables:
                marks = ", ".join("?" * len(columns))
                conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
            conn.execute("COMMIT")
            big = big or {"account_id": account_id, "folders": folders}
    finally:
        conn.close()
    return big
