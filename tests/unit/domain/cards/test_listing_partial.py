"""Searching with words no card holds all of: cards holding most of them follow those holding
every one, by how much of the query they hold (rare words weigh more); stop words decide
nothing; phrases, exclusions and qualifiers stay strict; pages follow one another exactly."""

import random

import pytest
from sqlalchemy import text

from cardvault.domain.cards import editing, listing, ranking
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.search import planning
from cardvault.domain.search.query import MAX_WORDS
from tests.unit.domain.cards.test_listing import SECRET, _walk
from tests.unit.domain.cards.test_reading import statements as recorded


def _add(database: Database, account_id: str, *contents: str, tags: list[str] | None = None) -> list[str]:
    with database.transaction() as session:
        return [
            editing.add_card(session, account_id=account_id, content=content, tags=tags or []).card.id
            for content in contents
        ]


def _found(database: Database, account_id: str, q: str, limit: int = 50) -> list[str]:
    with database.transaction(write=False) as session:
        page = listing.list_cards(
            session, account_id=account_id, secret=SECRET, filters=CardFilter(q=q), limit=limit
        )
    return [card.id for card in page.cards]


def test_a_question_finds_the_cards_holding_its_words(database: Database, account_id: str) -> None:
    postgres, other = _add(database, account_id, "Tuning Postgres autovacuum", "Sourdough starter routine")
    assert _found(database, account_id, "how do I tune autovacuum in postgres") == [postgres]
    assert _found(database, account_id, "what about autovacuum") == [postgres]
    assert _found(database, account_id, "starter for a postgres") == [other, postgres] or _found(
        database, account_id, "starter for a postgres"
    ) == [postgres, other]


def test_every_word_before_most_and_rare_words_weigh_more(database: Database, account_id: str) -> None:
    common = [f"Notes on a garden, day {i}" for i in range(6)]
    ids = _add(database, account_id, *common, "A garden of basil", "Basil pesto", "Pesto basil garden")
    *days, garden_basil, pesto, every = ids
    found = _found(database, account_id, "basil pesto garden")
    assert found[0] == every  # holds all three
    assert found[1] == pesto  # basil and pesto are rarer than garden
    assert found[2] == garden_basil
    assert set(found[3:]) == set(days)


def test_stop_words_never_decide_a_match_or_empty_a_result(database: Database, account_id: str) -> None:
    (kiwi, the) = _add(database, account_id, "Kiwi jam", "The end of it")
    assert _found(database, account_id, "the kiwi") == [kiwi]
    assert _found(database, account_id, "of it") == [the]  # only stop words: they must all match
    assert _found(database, account_id, "of what") == []


def test_phrases_exclusions_and_qualifiers_stay_strict(database: Database, account_id: str) -> None:
    grind, ratio, both = _add(
        database, account_id, "grind size matters", "brew ratio", "size of the grind and ratio"
    )
    tagged = _add(database, account_id, "grind coffee daily", tags=["coffee"])[0]
    assert _found(database, account_id, '"grind size" ratio') == [grind]
    assert set(_found(database, account_id, "grind ratio -size")) == {ratio, tagged}
    assert _found(database, account_id, "grind ratio tag:coffee") == [tagged]
    assert both in _found(database, account_id, "grind ratio")


def test_pages_of_a_partial_ranking_follow_one_another(database: Database, account_id: str) -> None:
    _add(database, account_id, *(f"alpha item {i}" for i in range(7)), *(f"beta item {i}" for i in range(5)))
    _add(database, account_id, "alpha beta gamma")
    whole = _found(database, account_id, "alpha beta gamma delta", limit=100)
    pages = _walk(database, account_id, CardFilter(q="alpha beta gamma delta"), limit=3, with_total=True)
    assert [card.id for page in pages for card in page.cards] == whole
    assert len(whole) == 13 and {page.total for page in pages} == {13}
    assert all(page.next_cursor for page in pages[:-1]) and pages[-1].next_cursor is None


def test_terms_found_near_each_other_rank_first_when_all_else_ties(
    database: Database, account_id: str
) -> None:
    # As many distinct words each; the near one is older, so only proximity puts it first.
    near = _add(database, account_id, "Notes\nheat transfer one two three four five")[0]
    apart = _add(database, account_id, "Notes\nheat one two three four five transfer")[0]
    _add(database, account_id, *(f"filler {i}" for i in range(3)))
    assert _found(database, account_id, "heat transfer")[:2] == [near, apart]
    assert _found(database, account_id, "transfer heat")[:2] == [near, apart]  # in either order


# --- the longest q: a page's statements stay bounded ------------------------------------------

MAX_Q = 1024  # the spec's maxLength of q
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _made_up_words(rng: random.Random, count: int) -> list[str]:
    """Distinct words of 12 to 16 letters that no stop word or other word begins."""
    made: dict[str, None] = {}
    while len(made) < count:
        made["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(6, 8)))] = None
    return list(made)


def _misspelt(word: str) -> str:
    """The word with its third letter replaced: one edit, not on the first letter."""
    return word[:2] + ("x" if word[2] != "x" else "y") + word[3:]


def longest_q(words: list[str]) -> str:
    """Distinct words joined up to q's maxLength, the last one cut to fill it exactly."""
    q = " ".join(words)
    assert len(q) >= MAX_Q, "too few words to fill q"
    return q[:MAX_Q]


def statement_bound(dialect: str) -> int:
    """The most statements a relevance page may send, whatever q holds (MAX_WORDS terms).

    The listing reads its first matches (1), each term for cards holding some (READ_TERMS, one
    more for the phrases alone), how the candidates hold the terms (PostgreSQL: 1 with their
    lengths; SQLite: their index text and tags, 2, cardvault.domain.search.holding, and their
    lengths, 1) and the page's views (1); the related words (cardvault.domain.search.feedback)
    their best cards' words (1), the vocabulary's counts of them (1), the cards holding them
    (1), how the candidates hold them and how the cards holding them hold q's terms (each as
    before). The plan on PostgreSQL reads the
    vocabulary (words and typos: 2), the words begun (1) and the account's count (1), and a q
    of more than listing.AS_WRITTEN terms sets the join order (1); SQLite asks one word at a
    time: its held count and stems (2 each), its typos (MAX_TYPO_WORDS at most) and its
    beginning (1 each), and the account's count (1)."""
    held = 1 if dialect == "postgresql" else 3
    listed = 1 + ranking.READ_TERMS + 1 + held + 1 + 3 + 2 * held
    if dialect == "postgresql":
        return listed + 4 + 1
    return listed + 2 * MAX_WORDS + planning.MAX_TYPO_WORDS + MAX_WORDS + 1


@pytest.fixture
def library(database: Database, account_id: str) -> dict[str, list[str]]:
    """Sixty cards: 80 common words, each held by about two fifths of forty cards (so none holds
    them all), and twenty cards of four rare words each."""
    rng = random.Random(43)
    common, rare = _made_up_words(rng, 80), _made_up_words(rng, 80)
    contents = [" ".join(rng.sample(common, 32)) for _ in range(40)]
    contents += [" ".join(rare[4 * i : 4 * i + 4]) for i in range(20)]
    _add(database, account_id, *contents)
    return {"common": common, "rare": rare, "misspelt": [_misspelt(word) for word in common + rare]}


@pytest.mark.parametrize("kind", ["misspelt", "common", "rare"])
def test_a_page_of_the_longest_q_sends_a_bounded_number_of_statements(
    database: Database, account_id: str, library: dict[str, list[str]], kind: str
) -> None:
    """q at its maxLength of distinct words (misspellings of the library's words, its common
    words, its rare words): the plan keeps MAX_WORDS terms, and a page and the next one send at
    most statement_bound statements, however many terms there are."""
    q = longest_q(library[kind])
    assert len(q) == MAX_Q and len(set(q.split())) > MAX_WORDS
    cursor, pages = None, 0
    while pages == 0 or (cursor is not None and pages < 3):
        pages += 1
        stop = recorded(database)
        with database.transaction(write=False) as session:
            page = listing.list_cards(
                session,
                account_id=account_id,
                secret=SECRET,
                filters=CardFilter(q=q),
                limit=10,
                cursor=cursor,
            )
        sent = stop()
        assert page.plan is not None and len(page.plan.terms) == MAX_WORDS
        assert page.cards or pages > 1  # each kind finds cards (as typed, or as typos of them)
        assert len(sent) <= statement_bound(database.dialect), (kind, len(sent))
        cursor = page.next_cursor


def test_the_statements_hold_the_terms_rarest_first_and_the_plan_keeps_qs_order(
    database: Database, account_id: str
) -> None:
    _add(database, account_id, *[f"common word {i}" for i in range(5)], "common rare")
    with database.transaction(write=False) as session:
        searched, plan = listing.searched(session, account_id, CardFilter(q="common word rare"))
    assert plan is not None
    assert [group[0].words for group in plan.query.required] == [("common",), ("word",), ("rare",)]
    assert [group[0].words for group in searched.query.required] == [("rare",), ("word",), ("common",)]


def test_a_long_q_is_planned_in_the_order_written(database: Database, account_id: str) -> None:
    if database.dialect != "postgresql":
        pytest.skip("the join order is PostgreSQL's planner's")

    def join_order(q: str) -> str:
        with database.transaction(write=False) as session:
            listing.searched(session, account_id, CardFilter(q=q))
            return str(session.execute(text("SHOW join_collapse_limit")).scalar())

    words = [f"word{chr(97 + i)}" for i in range(listing.AS_WRITTEN + 1)]
    assert join_order(" ".join(words[: listing.AS_WRITTEN])) == "8"
    assert join_order(" ".join(words)) == "1"
    assert join_order("word") == "8"  # for its own transaction only


def test_a_common_terms_cards_are_tested_one_by_one_in_list_order_on_sqlite(
    database: Database, account_id: str
) -> None:
    commons = _add(database, account_id, *[f"common note {i}" for i in range(60)])
    (rare,) = _add(database, account_id, "rare")
    stop = recorded(database)
    found = _found(database, account_id, "common rare", limit=100)
    sent = stop()
    # The rare card (one term), then the newest ranking.WINDOW cards holding "common".
    assert found == [rare, *commons[::-1][: ranking.WINDOW]]
    probed = [s for s in sent if "cards.pk + " in s]
    if database.dialect == "sqlite":
        # The reads of "common" and of the related word "note" (not the first matches of both).
        assert len(probed) == 2 and all("LIMIT" in statement for statement in probed)
    else:
        assert probed == []
