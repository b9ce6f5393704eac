"""What the relevance tier measures with: the judged sets (corpus.json's cards and keyword
queries, questions.json's natural questions), the library saved from them, ``q``'s ranking
through ``listing.list_cards``, Okapi BM25 (bm25s) over the same cards' folded words, and the
two figures: precision at 3 and nDCG at 10 with graded gains (2 for a best card, 1 for a
partly relevant one, a log2 discount)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import bm25s
import numpy as np

from cardvault.domain.cards import editing, listing
from cardvault.domain.db import Database
from cardvault.domain.search.index import index_card
from cardvault.domain.search.words import split_words

HERE = Path(__file__).parent
CORPUS = json.loads((HERE / "corpus.json").read_text())
QUESTIONS = json.loads((HERE / "questions.json").read_text())["questions"]
CARDS = {card["key"]: card for card in CORPUS["cards"]}
PAGE = 10  # nDCG@10 reads the first page of ten

# English function words: a question holding only these may answer an empty page; any other word
# a card holds must find that card (the test's own list, not the one search will use).
_STOP_WORDS = """a about above after again against all am an and any are as at be because been before being
    below between both but by can cannot could did do does doing don down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just me
    more most my myself no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would
    you your yours yourself"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


def card_text(card: dict[str, Any]) -> str:
    """What a card says: its title, content, notes, tags and URL."""
    return " ".join(
        t for t in (card["title"], card["content"], card["notes"], *card["tags"], card["url"]) if t
    )


def card_words(card: dict[str, Any]) -> list[str]:
    """The card's folded words, as search folds them (the tokens BM25 is given)."""
    return split_words(card_text(card))


def save_library(database: Database, account_id: str) -> dict[int, str]:
    """Save the corpus's cards in order (later ones newer), as the pipeline would leave them;
    return each card's key by its pk."""
    keys = {}
    for card in CORPUS["cards"]:
        with database.transaction() as session:
            made = editing.add_card(
                session,
                account_id=account_id,
                content=card["content"],
                notes=card["notes"],
                tags=card["tags"],
                url=card["url"],
                card_type=card["type"],
            ).card
            made.metadata_title = card["title"]  # what the link stage reads from the page
            made.is_favorited = card["favorite"]
            index_card(session, made)
            keys[made.pk] = card["key"]
    return keys


@dataclasses.dataclass
class Library:
    """The corpus saved in one account of a database, searched through ``listing.list_cards``."""

    database: Database
    account_id: str
    keys: dict[int, str]

    def ranking(self, q: str, limit: int = PAGE) -> list[str]:
        """The keys of the first page ``q`` answers, best first."""
        with self.database.transaction(write=False) as session:
            page = listing.list_cards(
                session,
                account_id=self.account_id,
                secret="s" * 48,
                filters=listing.CardFilter(q=q),
                limit=limit,
            )
        return [self.keys[card.pk] for card in page.cards]


class Bm25:
    """Okapi BM25 (bm25s, Lucene's variant, k1 1.5, b 0.75) over the corpus's cards' folded words."""

    def __init__(self) -> None:
        self.keys = list(CARDS)
        self.retriever = bm25s.BM25()
        self.retriever.index([card_words(CARDS[key]) for key in self.keys], show_progress=False)

    def ranking(self, q: str, limit: int = PAGE) -> list[str]:
        """The keys of the best ``limit`` cards for ``q``'s words (only cards scoring above 0),
        among the cards its qualifiers and exclusions allow (see keyword_terms)."""
        words, allowed = keyword_terms(q)
        scores = self.retriever.get_scores(words)
        order = np.argsort(-scores, kind="stable")
        found = [self.keys[i] for i in order if scores[i] > 0 and allowed(CARDS[self.keys[i]])]
        return found[:limit]


_TERM = re.compile(r'(-?)(?:(\w+):("[^"]*"?|\S+)|"([^"]*)"?|(\S+))')


def keyword_terms(q: str) -> tuple[list[str], Callable[[dict[str, Any]], bool]]:
    """A ``q`` for BM25: the words to score (a phrase's words, either side of OR) and which
    cards its qualifiers and ``-`` exclusions allow, so the keyword queries that filter compare
    like with like. Only the qualifiers the judged sets use are understood."""
    words: list[str] = []
    tests: list[Callable[[dict[str, Any]], bool]] = []
    for found in _TERM.finditer(q):
        negated, name, value, phrase, word = found.groups()
        if name is not None:
            test = _qualifier(name.lower(), value.strip('"'))
            tests.append((lambda card, t=test: not t(card)) if negated else test)
        elif negated:
            left_out = set(split_words(phrase if phrase is not None else word))
            tests.append(lambda card, out=left_out: not out & set(card_words(card)))
        elif word != "OR":
            words += split_words(phrase if phrase is not None else word)
    return words, lambda card: all(test(card) for test in tests)


def _qualifier(name: str, value: str) -> Callable[[dict[str, Any]], bool]:
    if name == "tag":
        return lambda card: value.lower() in [tag.lower() for tag in card["tags"]]
    if name == "type":
        return lambda card: bool(card["type"] == value)
    if name == "site":
        host = value.lower()
        return lambda card: bool(card["url"]) and (urlsplit(card["url"]).hostname or "").endswith(host)
    if name == "is" and value == "favorite":
        return lambda card: bool(card["favorite"])
    if name == "has" and value == "notes":
        return lambda card: bool(card["notes"])
    raise ValueError(f"{name}:{value} is not understood by the BM25 side")


def precision_at_3(ranked: list[str], top: list[str]) -> float:
    return len(set(ranked[:3]) & set(top)) / 3


def ndcg_at_10(ranked: list[str], gains: dict[str, int]) -> float:
    """Discounted cumulative gain of the first ten, over that of the best possible order."""
    dcg = sum(gains.get(key, 0) / math.log2(rank + 2) for rank, key in enumerate(ranked[:PAGE]))
    ideal = sorted(gains.values(), reverse=True)[:PAGE]
    return dcg / sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))


@dataclasses.dataclass(frozen=True)
class Judged:
    """One query of a phrasing, with its gains (2 for its best cards, 1 for partly relevant ones)."""

    q: str
    top: list[str]
    gains: dict[str, int]
    question: str  # the question it is a phrasing of (the keyword query itself for keywords)


def phrasings() -> dict[str, list[Judged]]:
    """The three phrasings: the keyword queries, the questions as written, and each question's
    three most telling words."""

    def gains(entry: dict[str, Any]) -> dict[str, int]:
        return {key: 1 for key in entry.get("partly", [])} | {key: 2 for key in entry["top"]}

    return {
        "keywords": [Judged(e["q"], e["top"], gains(e), e["q"]) for e in CORPUS["queries"]],
        "questions": [Judged(e["q"], e["top"], gains(e), e["q"]) for e in QUESTIONS],
        "three words": [Judged(e["words"], e["top"], gains(e), e["q"]) for e in QUESTIONS],
    }


@dataclasses.dataclass
class Figures:
    """One ranker's figures over one phrasing: the rankings, and their means."""

    rankings: dict[str, list[str]]
    precision: float
    ndcg: float
    empty: int


def measure(judged: list[Judged], ranking: Callable[[str], list[str]]) -> Figures:
    rankings = {j.q: ranking(j.q) for j in judged}
    return Figures(
        rankings,
        sum(precision_at_3(rankings[j.q], j.top) for j in judged) / len(judged),
        sum(ndcg_at_10(rankings[j.q], j.gains) for j in judged) / len(judged),
        sum(1 for j in judged if not rankings[j.q]),
    )


def table(dialect: str, figures: dict[str, tuple[Figures, Figures]], sizes: dict[str, int]) -> str:
    """The figures of q beside BM25's, one line per phrasing."""
    lines = [
        f"relevance on {dialect}: q beside Okapi BM25 (bm25s {bm25s.__version__}), same cards and queries",
        f"{'phrasing':<16}{'n':>4}{'q p@3':>8}{'bm25 p@3':>10}{'q nDCG@10':>11}{'bm25 nDCG@10':>14}"
        f"{'ratio':>7}{'q empty':>9}{'bm25 empty':>12}",
    ]
    for name, (ours, theirs) in figures.items():
        ratio = ours.ndcg / theirs.ndcg if theirs.ndcg else float("nan")
        lines.append(
            f"{name:<16}{sizes[name]:>4}{ours.precision:>8.3f}{theirs.precision:>10.3f}{ours.ndcg:>11.3f}"
            f"{theirs.ndcg:>14.3f}{ratio:>6.2f}x{ours.empty:>9}{theirs.empty:>12}"
        )
    return "\n".join(lines)
