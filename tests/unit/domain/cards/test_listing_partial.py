"""Searching with words no card holds all of: cards holding most of them follow those holding
every one, by how much of the query they hold (rare words weigh more); stop words decide
nothing; phrases, exclusions and qualifiers stay strict; pages follow one another exactly."""

from cardvault.domain.cards import editing, listing
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from tests.unit.domain.cards.test_listing import SECRET, _walk


def _add(database: Database, account_id: str, *contents: str, tags: list[str] | None = None) -> list[str]:
    with database.transaction() as session:
        return [
            editing.add_card(session, account_id=account_id, content=content, tags=tags or []).id
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
