"""Relevance on a library written for it (corpus.json: 100 cards and 30 queries, each with the
three cards a person judged its best answers, and distractors that mention its words in
passing, many saved later): the first three results of each query must hold at least 0.9 of
the expected ones on average (precision at 3), on both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cardvault.domain.cards import editing, listing
from cardvault.domain.db import Database
from cardvault.domain.search.index import index_card

CORPUS = json.loads((Path(__file__).parent / "corpus.json").read_text())
PRECISION = 0.9


def _library(database: Database, account_id: str) -> dict[int, str]:
    """Save the corpus's cards in order (later ones newer), as the pipeline would leave them."""
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
            )
            made.metadata_title = card["title"]  # what the link stage reads from the page
            made.is_favorited = card["favorite"]
            index_card(session, made)
            keys[made.pk] = card["key"]
    return keys


def _top(database: Database, account_id: str, keys: dict[int, str], q: str) -> list[str]:
    with database.transaction(write=False) as session:
        page = listing.list_cards(
            session, account_id=account_id, secret="s" * 48, filters=listing.CardFilter(q=q), limit=3
        )
    return [keys[card.pk] for card in page.cards]


def test_the_first_three_results_hold_the_expected_ones(database: Database, account_id: str) -> None:
    keys = _library(database, account_id)
    scores: list[float] = []
    misses: list[str] = []
    for query in CORPUS["queries"]:
        top = _top(database, account_id, keys, query["q"])
        expected: list[Any] = query["top"]
        scores.append(len(set(top) & set(expected)) / 3)
        if set(top) != set(expected):
            misses.append(f"{query['q']!r}: {top}, expected {expected}")
    precision = sum(scores) / len(scores)
    assert precision >= PRECISION, f"precision@3 {precision:.3f}\n" + "\n".join(misses)
    print(f"precision@3 {precision:.3f}; missed:\n" + "\n".join(misses))
