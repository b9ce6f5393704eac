"""The search vocabulary (cardvault.domain.search.vocabulary): each account's words with their
stems and how many cards hold them, and a trigram index for typos; each card's number of
indexed words (``cards.search_words``, its length to relevance). Both are counted here from the
index rows, a batch of cards at a time.

PostgreSQL: pg_trgm and btree_gin (contrib) make one GIN index of (account_id, word), so a typo
lookup reads only its account's entries. SQLite: an FTS5 trigram table of the words, padded as
pg_trgm pads them, kept by triggers on search_words.

Revision ID: 0030
Revises: 0029
"""

import json
import threading
from collections import Counter
from typing import Any

import sqlalchemy as sa
import Stemmer
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

# This migration's own copies of the rules it counted words by (cardvault.domain.search when it
# was written): a migration computes what it did then, whatever the service's rules become.
_GAP = "\ue000"  # the token between an FTS5 row's texts (migration 0025)
# English function words, which the vocabulary keeps no count of.
_WORDS = (
    # articles and determiners
    "a an the this that these those some any each every either neither no all both such "
    # pronouns
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves "
    "he him his himself she her hers herself it its itself they them their theirs themselves "
    # auxiliaries and modals
    "am is are was were be been being have has had having do does did doing done "
    "will would shall should can could may might must "
    # prepositions
    "about above across after against along among around at before behind below beneath beside "
    "between beyond by down during except for from in inside into near of off on onto out outside "
    "over past since through throughout to toward towards under until up upon with within without "
    # conjunctions
    "and but or nor so yet if then than because while although though unless whether "
    # question words
    "how what why which who whom whose when where "
    # other common function words
    "as not there here also just very too only own same other more most"
)
_STOP_WORDS = frozenset(_WORDS.split())
# ISO 639-1 codes (what the ai stage's languages are) of the Snowball algorithms.
_ISO = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "nn": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}


def _algorithm(language: str | None) -> str:
    """The Snowball algorithm of a language (ISO 639-1 code or English name); English when
    unknown or unsupported."""
    if not language:
        return "english"
    name = language.strip().lower().replace("_", "-")
    found = _ISO.get(name.split("-")[0], name)
    return found if found in Stemmer.algorithms() else "english"


_stemmers = threading.local()  # a Stemmer is not safe to share between threads


def _stemmer(name: str) -> Any:
    cached: dict[str, Any] = _stemmers.__dict__.setdefault("by_name", {})
    stemmer = cached.get(name)
    if stemmer is None:
        stemmer = cached[name] = Stemmer.Stemmer(name)
    return stemmer


def _stem(word: str, language: str | None = None) -> str:
    """The word's Snowball stem in the language (English when unknown)."""
    return str(_stemmer(_algorithm(language)).stemWord(word))


def _card_language(engine: dict[str, Any] | None) -> str | None:
    """The language the ai stage found for a card (its ``ai_engine``), if any."""
    found = (engine or {}).get("language")
    return found if isinstance(found, str) else None


_BATCH = 2000
_SQLITE_CARDS = """
SELECT c.pk, c.account_id, c.ai_engine, s.headline, s.body
FROM cards c LEFT JOIN card_search s ON s.rowid = c.pk
WHERE c.pk > :after ORDER BY c.pk LIMIT :batch
"""
_SQLITE_COUNT = """
INSERT INTO search_words (account_id, word, stem, cards) VALUES (:account, :word, :stem, :cards)
ON CONFLICT (account_id, word) DO UPDATE SET cards = cards + excluded.cards
"""
# A word's trigrams as pg_trgm makes them: padded with two spaces before and one after, so its
# first letters and its end are trigrams too (the tokenizer takes spaces as characters).
_SQLITE_GRAMS = (
    "CREATE VIRTUAL TABLE search_word_grams "
    "USING fts5(grams, account_id UNINDEXED, word UNINDEXED, tokenize = 'trigram')",
    "CREATE TRIGGER search_word_grams_insert AFTER INSERT ON search_words "
    "BEGIN INSERT INTO search_word_grams (grams, account_id, word) "
    "VALUES ('  ' || new.word || ' ', new.account_id, new.word); END",
    "CREATE TRIGGER search_word_grams_delete AFTER DELETE ON search_words "
    "BEGIN DELETE FROM search_word_grams WHERE search_word_grams MATCH '\"  ' || old.word || ' \"' "
    "AND account_id = old.account_id AND word = old.word; END",
)


_WORD = sa.String(100).with_variant(sa.String(100, collation="C"), "postgresql")


def upgrade() -> None:
    connection = op.get_bind()
    sqlite = connection.dialect.name == "sqlite"
    op.add_column("cards", sa.Column("search_words", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "search_words",
        sa.Column("account_id", sa.String(64), nullable=False),
        # Ordered by code point on PostgreSQL whatever the database's collation, so that the
        # words a beginning begins are one range of the index (cardvault.domain.search.planning).
        sa.Column("word", _WORD, nullable=False),
        sa.Column("stem", sa.String(100), nullable=False),
        sa.Column("cards", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("account_id", "word", name="pk_search_words"),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], ondelete="CASCADE", name="fk_search_words_account_id_accounts"
        ),
    )
    # The indexes after the counts: built once over the rows, not entry by entry (the GIN
    # index made first took 15 s a batch of 2,000 cards of 100 words).
    if sqlite:
        _count_sqlite(connection)
    else:
        _count_postgresql(connection)
    op.create_index("ix_search_words_account_stem", "search_words", ["account_id", "stem"])
    if sqlite:
        op.execute(_SQLITE_GRAMS[0])
        op.execute(
            "INSERT INTO search_word_grams (grams, account_id, word) "
            "SELECT '  ' || word || ' ', account_id, word FROM search_words"
        )
        for statement in _SQLITE_GRAMS[1:]:
            op.execute(statement)
    else:
        op.execute("SET LOCAL maintenance_work_mem = '256MB'")
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
        op.execute(
            "CREATE INDEX ix_search_words_trigrams ON search_words USING gin (account_id, word gin_trgm_ops)"
        )


def _count_sqlite(connection: Any) -> None:
    """Count every card's indexed words into cards.search_words and the vocabulary, a batch of
    cards at a time."""
    after = 0
    while True:
        rows = connection.execute(sa.text(_SQLITE_CARDS), {"after": after, "batch": _BATCH})
        batch = rows.all()
        if not batch:
            return
        after = batch[-1][0]
        lengths: list[dict[str, int]] = []
        held: Counter[tuple[str, str]] = Counter()
        stems: dict[tuple[str, str], str] = {}
        for row in batch:
            pk, account_id, engine = row[0], row[1], row[2]
            words = {word for value in row[3:] if value for word in value.split() if word != _GAP}
            if not words:
                continue
            lengths.append({"pk": pk, "n": len(words)})
            language = _card_language(_json(engine))
            for word in words:
                if word not in _STOP_WORDS:
                    held[account_id, word] += 1
                    stems.setdefault((account_id, word), _stem(word, language))
        if lengths:
            connection.execute(sa.text("UPDATE cards SET search_words = :n WHERE pk = :pk"), lengths)
        counted = sorted(held.items())
        if not counted:
            continue
        connection.execute(
            sa.text(_SQLITE_COUNT),
            [{"account": a, "word": w, "stem": stems[a, w], "cards": n} for (a, w), n in counted],
        )


_PG_LENGTHS = """
UPDATE cards c SET search_words = counted.n FROM (
    SELECT s.card_pk, count(DISTINCT w) AS n FROM card_search s, unnest(tsvector_to_array(s.words)) AS w
    WHERE s.card_pk > :after AND s.card_pk <= :upto AND s.part IN (0, 3) AND s.tag_key = ''
    GROUP BY s.card_pk
) counted WHERE c.pk = counted.card_pk
"""
_PG_ACCOUNT_WORDS = """
SELECT w, count(DISTINCT c.pk), (array_agg(c.ai_engine ->> 'language' ORDER BY c.pk))[1]
FROM cards c JOIN card_search s ON s.card_pk = c.pk, unnest(tsvector_to_array(s.words)) AS w
WHERE c.account_id = :account AND s.part IN (0, 3) AND s.tag_key = ''
GROUP BY w
"""
_PG_INSERT = """
INSERT INTO search_words (account_id, word, stem, cards)
SELECT :account, word, stem, cards
FROM unnest(CAST(:words AS text[]), CAST(:stems AS text[]), CAST(:cards AS bigint[])) AS t(word, stem, cards)
"""
_PG_BATCH = 20_000  # cards of a length update; words of an insert


def _count_postgresql(connection: Any) -> None:
    """As ``_count_sqlite``, in SQL: the cards' lengths a range of pks at a time, the vocabulary an
    account at a time (each word's stem in the language of its first card, as the service
    stems it)."""
    last = connection.execute(sa.text("SELECT max(pk) FROM cards")).scalar() or 0
    for after in range(0, last, _PG_BATCH):
        connection.execute(sa.text(_PG_LENGTHS), {"after": after, "upto": after + _PG_BATCH})
    accounts = connection.execute(sa.text("SELECT id FROM accounts ORDER BY id")).scalars().all()
    for account_id in accounts:
        rows = connection.execute(sa.text(_PG_ACCOUNT_WORDS), {"account": account_id}).all()
        counted = sorted((word, n, language) for word, n, language in rows if word not in _STOP_WORDS)
        for start in range(0, len(counted), _PG_BATCH):
            chunk = counted[start : start + _PG_BATCH]
            connection.execute(
                sa.text(_PG_INSERT),
                {
                    "account": account_id,
                    "words": [word for word, _, _ in chunk],
                    "stems": [_stem(word, language) for word, _, language in chunk],
                    "cards": [n for _, n, _ in chunk],
                },
            )


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":
        op.execute("DROP TRIGGER search_word_grams_delete")
        op.execute("DROP TRIGGER search_word_grams_insert")
        op.execute("DROP TABLE search_word_grams")
    op.drop_table("search_words")  # with its indexes; the extensions stay (others may use them)
    op.drop_column("cards", "search_words")
