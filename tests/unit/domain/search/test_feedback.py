"""Related words (pseudo-relevance feedback): the words a question's best matches share find the
cards that answer it in other words, after the cards holding its terms; what q holds strictly
(phrases, exclusions, qualifiers) still holds; a q of one term gets none; only words other
cards hold, not stop words nor q's own, and of a long card only its first words."""

import pytest

from cardvault.domain.cards import editing, listing
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.search import feedback, planning
from cardvault.domain.search.query import parse
from tests.unit.domain.cards.test_listing import SECRET, _walk


def _add(database: Database, account_id: str, content: str, tags: list[str] | None = None) -> int:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, content=content, tags=tags or []).card.pk


def _page(database: Database, account_id: str, q: str, limit: int = 50) -> listing.CardPage:
    with database.transaction(write=False) as session:
        return listing.list_cards(
            session, account_id=account_id, secret=SECRET, filters=CardFilter(q=q), limit=limit, explain=True
        )


@pytest.fixture
def sleep(database: Database, account_id: str) -> dict[str, int]:
    """A card answering "fall asleep faster" in those words, two about sleep in others, and
    cards holding one of the question's words by the way."""
    return {
        "faster": _add(database, account_id, "How to fall asleep faster and sleep better", ["sleep"]),
        "rules": _add(database, account_id, "Sleep rules: no caffeine after 1 pm, same wake time", ["sleep"]),
        "log": _add(database, account_id, "Sleep log: deep sleep drops after evening runs", ["health"]),
        "train": _add(database, account_id, "Night train from Zurich to Vienna"),
        "cake": _add(database, account_id, "Lemon cake that bakes faster"),
        "other": _add(database, account_id, "Sourdough starter routine"),
    }


def test_a_question_finds_the_cards_answering_it_in_other_words(
    database: Database, account_id: str, sleep: dict[str, int]
) -> None:
    page = _page(database, account_id, "how can I fall asleep faster at night")
    order = [card.pk for card in page.cards]
    assert order[0] == sleep["faster"]
    assert {sleep["rules"], sleep["log"]} <= set(order)  # neither holds a word of the question
    assert sleep["other"] not in order
    explained = page.explained or {}
    for pk in (sleep["rules"], sleep["log"]):
        assert not any(term.held for term in explained[pk].terms) and explained[pk].related > 0
    assert explained[sleep["train"]].related == 0  # it shares none of the best card's words
    # Cards holding a word of q come before those holding only related words.
    held = [any(term.held for term in explained[pk].terms) for pk in order]
    assert held == sorted(held, reverse=True)


def test_pages_of_related_cards_follow_one_another_exactly(
    database: Database, account_id: str, sleep: dict[str, int]
) -> None:
    q = "how can I fall asleep faster at night"
    whole = [card.pk for card in _page(database, account_id, q).cards]
    pages = _walk(database, account_id, CardFilter(q=q), limit=1)
    walked = [card.pk for page in pages for card in page.cards]
    assert walked == whole and len(whole) == 5


def test_phrases_exclusions_and_qualifiers_hold_for_related_cards(
    database: Database, account_id: str, sleep: dict[str, int]
) -> None:
    excluded = [card.pk for card in _page(database, account_id, "fall asleep faster -caffeine").cards]
    assert sleep["log"] in excluded and sleep["rules"] not in excluded
    phrased = [card.pk for card in _page(database, account_id, '"fall asleep" faster night').cards]
    assert phrased == [sleep["faster"]]  # every card holds the phrase
    tagged = [card.pk for card in _page(database, account_id, "fall asleep faster tag:sleep").cards]
    assert set(tagged) == {sleep["faster"], sleep["rules"]}


def test_a_q_of_one_term_finds_only_the_cards_holding_it(
    database: Database, account_id: str, sleep: dict[str, int]
) -> None:
    assert [card.pk for card in _page(database, account_id, "asleep").cards] == [sleep["faster"]]


def test_related_words_leave_out_stop_words_qs_words_and_words_no_other_card_holds(
    database: Database, account_id: str, sleep: dict[str, int]
) -> None:
    with database.transaction(write=False) as session:
        plan = planning.plan(session, account_id, parse("falling asleep faster"))
        related = feedback.related(session, account_id, plan, [(sleep["faster"], 1.0)])
    assert related is not None
    words = [term.texts[0].words[0] for term in related.terms]
    # "how", "to", "and" are stop words; "fall" is a form of "falling", "asleep" and "faster"
    # are q's; "better" no other card holds.
    assert words == ["sleep"]
    assert not related.droppable or all(not term.strict for term in related.terms)


def test_a_long_cards_words_are_read_only_as_far_as_its_first_words(
    database: Database, account_id: str
) -> None:
    body = " ".join(f"w{i:04d}" for i in range(feedback.BODY_WORDS + 100))
    long = _add(database, account_id, f"Long read\n{body}", ["reading"])
    with database.transaction(write=False) as session:
        words = feedback.card_words(session, [long])[long]
    assert {"long", "read", "reading", "w0000", f"w{feedback.BODY_WORDS - 3:04d}"} <= words
    assert f"w{feedback.BODY_WORDS + 50:04d}" not in words
    assert len(words) <= feedback.BODY_WORDS + 3
