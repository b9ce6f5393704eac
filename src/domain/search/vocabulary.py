"""An account's search vocabulary: every word of its cards' headlines and bodies (Trash
included, until purged) with its Snowball stem and how many cards hold it, so a query finds a
word's other forms ("taxes" finds "tax") and what a typo meant ("kubernets": "kubernetes").

Counts. ``count`` notes a card's words that came (+1) and went (-1); the notes wait in the
session (cardvault.domain.pending: a savepoint rolled back forgets its own) and are written
once, just before COMMIT, in one statement with the words in order (``install``): two
transactions of an account then take its vocabulary rows in the same order, and never wait for
each other (the lock order in cardvault.domain.db). Stop words are not counted. A row left at 0
cards stays; lookups ignore it.

Typos (as Meilisearch allows them): none in a word under 5 letters, one edit from 5 to 8, two
from 9; an edit inserts, deletes or replaces a letter or swaps two neighbours (optimal string
alignment), never the first letter. Candidates come from a trigram index of the account's words
(PostgreSQL: pg_trgm in a GIN index with the account; SQLite: an FTS5 trigram table), the most
similar first, and the exact distance decides."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import Stemmer
from sqlalchemy import event, text
from sqlalchemy.orm import Session, sessionmaker

from cardvault.domain.pending import Pending
from cardvault.domain.search.stopwords import STOP_WORDS

MAX_STEMS = 8
MAX_TYPOS = 8
CANDIDATES = 50  # the most similar words by trigrams, of which the exact distance keeps some
ENGLISH = "english"
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
_ALGORITHMS = frozenset(Stemmer.algorithms())
_stemmers = threading.local()  # a Stemmer is not safe to share between threads


def algorithm(language: str | None) -> str:
    """The Snowball algorithm of a language given by its ISO 639-1 code (``pt``, ``pt-BR``) or
    its English name (``Portuguese``); English when unknown or unsupported."""
    if not language:
        return ENGLISH
    name = language.strip().lower().replace("_", "-")
    found = _ISO.get(name.split("-")[0], name)
    return found if found in _ALGORITHMS else ENGLISH


def _stemmer(name: str) -> Any:
    cached: dict[str, Any] = _stemmers.__dict__.setdefault("by_name", {})
    stemmer = cached.get(name)
    if stemmer is None:
        stemmer = cached[name] = Stemmer.Stemmer(name)
    return stemmer


def stem(word: str, language: str | None = None) -> str:
    """The word's Snowball stem in the language (English when unknown)."""
    return str(_stemmer(algorithm(language)).stemWord(word))


def card_language(engine: dict[str, Any] | None) -> str | None:
    """The language the ai stage found for a card (its ``ai_engine``), if any."""
    found = (engine or {}).get("language")
    return found if isinstance(found, str) else None


# session.info's pending counts: {(account_id, word): (cards added, stem)}
_PENDING: Pending[tuple[str, str], tuple[int, str]] = Pending("cardvault.vocabulary")


def install(sessions: sessionmaker[Session]) -> None:
    """Write the counts noted in every session this sessionmaker makes at its COMMIT; install
    it before cardvault.domain.changes (whose counters are the last lock a writer takes)."""
    event.listen(sessions, "before_commit", _write)
    _PENDING.install(sessions)


def count(
    session: Session,
    *,
    account_id: str,
    added: Iterable[str] = (),
    removed: Iterable[str] = (),
    language: str | None = None,
) -> None:
    """Note that one more card holds each ``added`` word (stemmed in ``language``) and one
    fewer each ``removed`` word; stop words are left out."""
    pending = _PENDING.of(session)
    for words, delta in ((added, 1), (removed, -1)):
        for word in words:
            if word in STOP_WORDS:
                continue
            key = (account_id, word)
            had = pending.get(key)
            if had is None:
                pending[key] = (delta, stem(word, language) if delta > 0 else "")
            else:
                pending[key] = (had[0] + delta, had[1] or (stem(word, language) if delta > 0 else ""))


_PG_WRITE = """
INSERT INTO search_words (account_id, word, stem, cards)
SELECT account_id, word, stem, cards
FROM unnest(CAST(:accounts AS text[]), CAST(:words AS text[]), CAST(:stems AS text[]),
    CAST(:cards AS bigint[])) AS counted(account_id, word, stem, cards)
ORDER BY account_id, word
ON CONFLICT (account_id, word) DO UPDATE SET cards = search_words.cards + EXCLUDED.cards
"""
_SQLITE_WRITE = """
INSERT INTO search_words (account_id, word, stem, cards) VALUES (:account_id, :word, :stem, :cards)
ON CONFLICT (account_id, word) DO UPDATE SET cards = cards + excluded.cards
"""


def _write(session: Session) -> None:
    if _PENDING.released(session):  # a savepoint's counts are written at the outer COMMIT
        return
    # What the COMMIT would flush goes first: cards before vocabulary rows (the lock order).
    session.flush()
    pending = _PENDING.take(session)
    rows = sorted(
        (account_id, word, word_stem or stem(word), delta)
        for (account_id, word), (delta, word_stem) in pending.items()
        if delta
    )
    if not rows:
        return
    if session.get_bind().dialect.name == "postgresql":
        accounts, words, stems, cards = (list(column) for column in zip(*rows, strict=True))
        session.execute(
            text(_PG_WRITE), {"accounts": accounts, "words": words, "stems": stems, "cards": cards}
        )
    else:
        session.execute(
            text(_SQLITE_WRITE),
            [{"account_id": a, "word": w, "stem": s, "cards": c} for a, w, s, c in rows],
        )


@dataclass(frozen=True)
class Forms:
    """What the account's vocabulary knows of a query word."""

    cards: int  # cards holding the word as typed (0: not in the vocabulary)
    # (word, cards): other words of the vocabulary with the word's stem, most cards first
    stems: tuple[tuple[str, int], ...] = ()
    # (word, cards): only when cards == 0, words within the typo allowance, fewest edits first
    # and then most cards
    typos: tuple[tuple[str, int], ...] = ()


NOTHING = Forms(0)


def allowance(word: str) -> int:
    """How many edits a typo of the word may hold: none under 5 letters, one to 8, then two."""
    return 0 if len(word) < 5 else 1 if len(word) <= 8 else 2


def distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b`` (insertions, deletions,
    substitutions and swaps of neighbours), or ``limit + 1`` when it is more than ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, before[j - 2] + 1)
            row[j] = best
        if min(row) > limit:
            return limit + 1
    return min(row[-1], limit + 1)


def forms(
    session: Session, account_id: str, words: Sequence[str], *, typos: Sequence[str]
) -> dict[str, Forms]:
    """What the account's vocabulary knows of each query word (folded): how many cards hold it,
    its other forms (same stem) and, for the words of ``typos`` it does not hold, what they may
    be typos of. A stop word is not in the vocabulary and gets neither. PostgreSQL: two
    statements (one without typos to seek); SQLite: one per word and one per typo sought."""
    asked = [word for word in dict.fromkeys(words) if word not in STOP_WORDS]
    found: dict[str, Forms] = {word: NOTHING for word in words}
    if not asked:
        return found
    postgresql = session.get_bind().dialect.name == "postgresql"
    known = (_known_postgresql if postgresql else _known_sqlite)(session, account_id, asked)
    for word in asked:
        cards, stems = known.get(word, (0, []))
        found[word] = Forms(cards, tuple(stems[:MAX_STEMS]))
    sought = [
        word for word in dict.fromkeys(typos) if word in known and known[word][0] == 0 and allowance(word)
    ]
    if sought:
        candidates = (_candidates_postgresql if postgresql else _candidates_sqlite)(
            session, account_id, sought
        )
        for word in sought:
            limit = allowance(word)
            near = sorted(
                (edits, -cards, candidate)
                for candidate, cards in candidates.get(word, ())
                if candidate != word
                and candidate[0] == word[0]
                and (edits := distance(word, candidate, limit)) <= limit
            )
            typo_forms = tuple((candidate, -cards) for _, cards, candidate in near[:MAX_TYPOS])
            found[word] = Forms(0, found[word].stems, typo_forms)
    return found


_Known = dict[str, tuple[int, list[tuple[str, int]]]]

_PG_KNOWN = text(f"""
WITH asked AS (
    SELECT asked.word, COALESCE(held.stem, asked.stem) AS stem, COALESCE(held.cards, 0) AS cards
    FROM unnest(CAST(:words AS text[]), CAST(:stems AS text[])) AS asked(word, stem)
    LEFT JOIN search_words held ON held.account_id = :account AND held.word = asked.word
)
SELECT asked.word, GREATEST(asked.cards, 0), other.word, other.cards
FROM asked LEFT JOIN LATERAL (
    SELECT o.word, o.cards FROM search_words o
    WHERE o.account_id = :account AND o.stem = asked.stem AND o.word <> asked.word AND o.cards > 0
    ORDER BY o.cards DESC, o.word
    LIMIT {MAX_STEMS}
) other ON true
""")


def _known_postgresql(session: Session, account_id: str, words: list[str]) -> _Known:
    rows = session.execute(
        _PG_KNOWN, {"account": account_id, "words": words, "stems": [stem(word) for word in words]}
    )
    known: _Known = {}
    for word, cards, other, other_cards in rows:
        stems = known.setdefault(word, (int(cards), []))[1]
        if other is not None:
            stems.append((other, int(other_cards)))
    return known


_SQLITE_HELD = text("SELECT stem, cards FROM search_words WHERE account_id = :account AND word = :word")
_SQLITE_STEMS = text(f"""
SELECT word, cards FROM search_words
WHERE account_id = :account AND stem = :stem AND word <> :word AND cards > 0
ORDER BY cards DESC, word
LIMIT {MAX_STEMS}
""")


def _known_sqlite(session: Session, account_id: str, words: list[str]) -> _Known:
    known: _Known = {}
    for word in words:
        held = session.execute(_SQLITE_HELD, {"account": account_id, "word": word}).first()
        word_stem, cards = (held[0], max(int(held[1]), 0)) if held else (stem(word), 0)
        others = session.execute(_SQLITE_STEMS, {"account": account_id, "stem": word_stem, "word": word})
        known[word] = (cards, [(other, int(other_cards)) for other, other_cards in others])
    return known


# pg_trgm's % finds words at least pg_trgm.similarity_threshold alike (set to 0.2 for every
# session, cardvault.domain.db): one edit in the middle of a five-letter word leaves it 0.2 alike.
_PG_CANDIDATES = text(f"""
SELECT asked.word, near.word, near.cards
FROM unnest(CAST(:words AS text[])) AS asked(word)
CROSS JOIN LATERAL (
    SELECT v.word, v.cards FROM search_words v
    WHERE v.account_id = :account AND v.word % asked.word AND v.cards > 0
        AND left(v.word, 1) = left(asked.word, 1)
        AND length(v.word) BETWEEN length(asked.word) - 2 AND length(asked.word) + 2
    ORDER BY similarity(v.word, asked.word) DESC, v.cards DESC, v.word
    LIMIT {CANDIDATES}
) near
""")


def _candidates_postgresql(
    session: Session, account_id: str, words: list[str]
) -> dict[str, list[tuple[str, int]]]:
    candidates: dict[str, list[tuple[str, int]]] = {}
    for word, near, cards in session.execute(_PG_CANDIDATES, {"account": account_id, "words": words}):
        candidates.setdefault(word, []).append((near, int(cards)))
    return candidates


# The account's words sharing a trigram with the word (both padded as pg_trgm pads them), those
# most alike first (FTS5's rank), with the same first letter and a length within the allowance.
_SQLITE_CANDIDATES = text(f"""
SELECT v.word, v.cards FROM (
    SELECT word, rank FROM search_word_grams
    WHERE search_word_grams MATCH :grams AND account_id = :account AND substr(word, 1, 1) = :first
        AND length(word) BETWEEN :shortest AND :longest
    ORDER BY rank
    LIMIT {CANDIDATES}
) near
JOIN search_words v ON v.account_id = :account AND v.word = near.word
WHERE v.cards > 0
""")


def _candidates_sqlite(
    session: Session, account_id: str, words: list[str]
) -> dict[str, list[tuple[str, int]]]:
    candidates: dict[str, list[tuple[str, int]]] = {}
    for word in words:
        padded = f"  {word} "
        grams = " OR ".join(dict.fromkeys(f'"{padded[i : i + 3]}"' for i in range(len(padded) - 2)))
        limit = allowance(word)
        parameters = {
            "account": account_id,
            "grams": grams,
            "first": word[0],
            "shortest": len(word) - limit,
            "longest": len(word) + limit,
        }
        rows = session.execute(_SQLITE_CANDIDATES, parameters)
        candidates[word] = [(near, int(cards)) for near, cards in rows]
    return candidates
