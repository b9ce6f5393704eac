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

import functools
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa
from alembic import op
from w3lib.url import canonicalize_url

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# This migration's own copies of the rules it indexed cards by (cardvault.domain.urls and
# cardvault.domain.search when it was written): a migration computes what it did then,
# whatever the service's rules become. The URL's normal form and its site key:
_TRACKING_PARAMETERS = frozenset(
    {
        "fbclid",
        "gclid",
        "gbraid",
        "wbraid",
        "dclid",
        "msclkid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "igshid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "ref_src",
    }
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_MAX_URL = 2048


def _normal_url(url: str) -> str | None:
    """The URL's normal form, or None when it is no http or https URL with a host."""
    if len(url) > _MAX_URL:
        return None
    try:
        canonical = canonicalize_url(url.strip(), keep_fragments=True)
        parts = urlsplit(canonical)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme not in _DEFAULT_PORTS or not host:
        return None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        netloc = f"{netloc}:{port}"
    if "@" in parts.netloc:
        netloc = f"{parts.netloc.rsplit('@', 1)[0]}@{netloc}"
    query = "&".join(pair for pair in parts.query.split("&") if pair and not _tracking(pair))
    fragment = parts.fragment if parts.fragment[:1] in ("!", "/") else ""
    return urlunsplit((parts.scheme, netloc, parts.path or "/", query, fragment))


def _tracking(pair: str) -> bool:
    name = pair.split("=", 1)[0].lower()
    return name.startswith("utm_") or name in _TRACKING_PARAMETERS


_MAX_HOST = 253


def _url_site(url: str | None) -> str | None:
    """The site key of the URL's host in its normal form (``com.example.blog.``), or None."""
    normal = None if url is None else _normal_url(url)
    host = None if normal is None else urlsplit(normal).hostname
    if not host or len(host) > _MAX_HOST:
        return None
    return "".join(f"{label}." for label in reversed(host.split(".")))


# Words as search saw them: runs of letters and digits, case-folded, without accents.
_WORD = re.compile(r"[^\W_]+")
_MAX_WORD_LENGTH = 100


@functools.cache
def _marks() -> tuple[dict[int, None], dict[int, None]]:
    """str.translate tables deleting every combining mark, and every one but U+0345 (which
    case-folds to iota, so it stays until folded); made when first used, not at import."""
    codes = range(0x300, sys.maxunicode + 1)
    marks: dict[int, None] = {c: None for c in codes if unicodedata.category(chr(c)).startswith("M")}
    return marks, {c: None for c in marks if c != 0x345}


def _split_words(value: str) -> list[str]:
    marks, before_folding = _marks()
    unmarked = value.translate(before_folding)
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFD", unmarked).casefold()).translate(marks)
    return _WORD.findall(unicodedata.normalize("NFC", folded))


# The index's texts: a headline and a body, each text's words with their positions.
_GAP = "\ue000"  # a private-use character: a token to FTS5's unicode61 tokenizer
_INDEX_BUDGET = 900_000
_MAX_POSITION = 16_383
_MAX_POSITIONS = 256
_FIRST_LINE = 200


def _title_of(card_type: str, title: str | None, content: str | None) -> str | None:
    if title or card_type not in ("text", "quote") or not content:
        return title
    end = content.find("\n", 0, _FIRST_LINE + 1)
    if end >= 0:
        return content[:end]
    if len(content) <= _FIRST_LINE:
        return content
    cut = content.rfind(" ", 0, _FIRST_LINE + 1)
    return content[: cut if cut > 0 else _FIRST_LINE]


def _word_runs(texts: Iterable[str | None]) -> list[list[str]]:
    return [[word[:_MAX_WORD_LENGTH] for word in _split_words(value or "")] for value in texts]


def _tsvector(runs: list[list[str]]) -> str | None:
    positions: dict[str, list[int]] = {}
    budget = _INDEX_BUDGET
    at = 0
    for run in runs:
        for word in run:
            at = min(at + 1, _MAX_POSITION)
            kept = positions.get(word)
            if kept is None:
                budget -= len(word.encode()) + 8
                if budget < 0:
                    break
                positions[word] = [at]
            elif len(kept) < _MAX_POSITIONS and kept[-1] != at:
                budget -= 2
                kept.append(at)
        at += 1
    if not positions:
        return None
    return " ".join(f"'{word}':{','.join(map(str, kept))}" for word, kept in positions.items())


def _fts_text(runs: list[list[str]]) -> str:
    return f" {_GAP} ".join(" ".join(run) for run in runs if run)


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
        _gapped_tag_words(f" {_GAP} ")
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
        sites = [{"card_pk": row[0], "site": _url_site(row[5])} for row in rows if row[5] is not None]
        if sites:
            connection.execute(
                cards.update()
                .where(cards.c.pk == sa.bindparam("card_pk"))
                .values(url_site=sa.bindparam("site")),
                sites,
            )
        entries = []
        for pk, card_type, title, notes, *body in rows:
            headline, texts = _word_runs([_title_of(card_type, title, body[0]), notes]), _word_runs(body)
            if sqlite:
                entries.append({"rowid": pk, "headline": _fts_text(headline), "body": _fts_text(texts)})
                continue
            for part, runs in ((0, texts), (3, headline)):
                vector = _tsvector(runs)
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
            f"SELECT rowid, replace(headline || ' ' || body, '{_GAP}', ' ') FROM card_search"
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
