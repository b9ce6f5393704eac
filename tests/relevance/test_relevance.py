"""Relevance on a library written for it (corpus.json: 100 cards and 30 keyword queries, each
with the three cards a person judged its best answers, and distractors that mention its words
in passing, many saved later; questions.json: natural questions over the same cards, judged
the same way, with partly relevant cards for nDCG), on both databases.

Each database's figures are printed beside those of Okapi BM25 (bm25s) over the same cards'
folded words, for three phrasings: the keyword queries, the questions as written, and each
question's three most telling words (chosen by hand). The first three results of the keyword
queries must hold at least 0.94 of the expected ones on average (precision at 3), those of the
questions at least QUESTION_PRECISION (issue 43 aims at 0.8); nDCG@10 must be at least BM25's
on every phrasing, and no question may answer an empty page while a card holds one of its
words (other than stop words)."""

from __future__ import annotations

import pytest

from cardvault.domain.auth import accounts
from cardvault.domain.db import Database
from cardvault.domain.search.words import split_words
from tests.relevance.measures import (
    CARDS,
    QUESTIONS,
    STOP_WORDS,
    Bm25,
    Figures,
    Library,
    card_words,
    measure,
    phrasings,
    precision_at_3,
    save_library,
    table,
)

KEYWORD_PRECISION = 0.94
QUESTION_PRECISION = 0.7  # what q reaches today (0.72; BM25: 0.553); issue 43 aims at 0.8
PHRASINGS = phrasings()


@pytest.fixture(scope="module")
def figures(database: Database) -> dict[str, tuple[Figures, Figures]]:
    """q's figures and BM25's for each phrasing, measured on one library of the database; the
    table is printed (run with -s to see it)."""
    with database.transaction() as session:
        account_id = accounts.create_account(session, name=f"relevance-{database.dialect}").id
    library = Library(database, account_id, save_library(database, account_id))
    bm25 = Bm25()
    measured = {
        name: (measure(js, library.ranking), measure(js, bm25.ranking)) for name, js in PHRASINGS.items()
    }
    print("\n" + table(database.dialect, measured, {name: len(js) for name, js in PHRASINGS.items()}))
    return measured


def _misses(name: str, ours: Figures) -> str:
    return "\n".join(
        f"{j.q!r}: {ours.rankings[j.q][:3]}, expected {j.top}"
        for j in PHRASINGS[name]
        if precision_at_3(ours.rankings[j.q], j.top) < 1
    )


def test_the_first_three_results_hold_the_expected_ones(figures: dict[str, tuple[Figures, Figures]]) -> None:
    ours, theirs = figures["keywords"]
    assert ours.precision >= KEYWORD_PRECISION, (
        f"keyword precision@3 {ours.precision:.3f} (BM25 {theirs.precision:.3f})\n"
        + _misses("keywords", ours)
    )


def test_every_phrasing_ranks_at_least_as_well_as_bm25_by_ndcg(
    figures: dict[str, tuple[Figures, Figures]],
) -> None:
    """Issue 43's aim: nDCG@10 of q at least BM25's, for keywords, questions as written and their
    three telling words alike. (precision@3 is printed; on the three words BM25's counting of
    how often a word occurs still wins it, 0.684 against 0.706.)"""
    worse = [
        f"{name}: nDCG@10 {ours.ndcg:.3f} (BM25 {theirs.ndcg:.3f})"
        for name, (ours, theirs) in figures.items()
        if ours.ndcg < theirs.ndcg
    ]
    assert worse == [], "\n".join(worse)


def test_questions_find_their_best_cards_first(figures: dict[str, tuple[Figures, Figures]]) -> None:
    """At least QUESTION_PRECISION today; issue 43 asks 0.8 (open: see its notes)."""
    ours, theirs = figures["questions"]
    assert ours.precision >= QUESTION_PRECISION, (
        f"question precision@3 {ours.precision:.3f} (BM25 {theirs.precision:.3f})\n"
        + _misses("questions", ours)
    )


def test_no_question_answers_an_empty_page_while_a_card_holds_one_of_its_words(
    figures: dict[str, tuple[Figures, Figures]],
) -> None:
    held = {word for card in CARDS.values() for word in card_words(card)}
    empty = [
        f"{name}: {j.q!r} (cards hold {sorted(words)})"
        for name in ("questions", "three words")
        for j in PHRASINGS[name]
        if not figures[name][0].rankings[j.q] and (words := (set(split_words(j.q)) - STOP_WORDS) & held)
    ]
    assert empty == [], f"{len(empty)} empty pages:\n" + "\n".join(empty)


def test_the_judged_questions_are_answerable_from_the_corpus() -> None:
    """Each question names three distinct best cards of the corpus and partly relevant ones
    apart from them, three telling words, and at least one best card shares one of them (as
    written, or as the start of the card's word: so a person's other word forms stay possible)."""
    assert len(QUESTIONS) >= 60
    for question in QUESTIONS:
        top, partly = question["top"], question.get("partly", [])
        assert len(set(top)) == 3 and not set(top) & set(partly), question
        assert set(top) | set(partly) <= CARDS.keys(), question
        telling = split_words(question["words"])
        assert len(telling) == 3, question
        held = {word for key in top for word in card_words(CARDS[key])}
        assert any(w.startswith(t) or t.startswith(w) for t in telling for w in held), question
