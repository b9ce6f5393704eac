"""A query's plan: stop words left out (unless every term is one), phrases strict, each word's
other forms from the account's cards, and rarer words weighing more."""

from hypothesis import HealthCheck, given, settings
from sqlalchemy import text

from cardvault.domain.cards import editing
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.search import planning
from cardvault.domain.search.planning import Plan
from cardvault.domain.search.query import MAX_WORDS, Text, parse
from tests.unit.domain.cards.test_listing import _walk
from tests.unit.domain.search.test_query import queries


def _plan(database: Database, account_id: str, q: str) -> Plan:
    with database.transaction(write=False) as session:
        return planning.plan(session, account_id, parse(q))


def _texts(plan: Plan) -> list[list[tuple[str, str]]]:
    return [[(" ".join(found.words), found.form) for found in term.texts] for term in plan.terms]


def test_stop_words_are_left_out_unless_every_term_is_one(database: Database, account_id: str) -> None:
    plan = _plan(database, account_id, "how do I tune the engine")
    assert [term.texts[0].words for term in plan.terms] == [("tune",), ("engine",)]
    assert not plan.stop_words_only
    only = _plan(database, account_id, "the who")
    assert [term.texts[0].words for term in only.terms] == [("the",), ("who",)]
    assert only.stop_words_only and only.droppable == ()
    assert _plan(database, account_id, '"the" engine').terms[0].texts == (Text(("the",), prefix=False),)


def test_a_word_finds_its_other_forms_and_a_phrase_none(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        editing.add_card(session, account_id=account_id, content="Taxed twice\nthe kubernetes taxes")
    plan = _plan(database, account_id, 'tax kubernets "taxes"')
    tax, kube, phrase = _texts(plan)
    assert tax[0] == ("tax", "typed") and {("taxed", "stem"), ("taxes", "stem")} <= set(tax)
    assert kube[0] == ("kubernets", "typed") and [word for word, _ in kube[1:]] == ["kubernetes"]
    assert phrase == [("taxes", "typed")]
    assert [term.strict for term in plan.terms] == [False, False, True]
    assert plan.droppable == (0, 1)
    held = _plan(database, account_id, "kubernetes")  # held as typed: no typo is sought
    assert _texts(held) == [[("kubernetes", "typed")]]


def test_rarer_words_weigh_more(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        for i in range(9):
            editing.add_card(
                session, account_id=account_id, content=f"garden note {i}" + (" basil" if i < 2 else "")
            )
    plan = _plan(database, account_id, "garden basil missing")
    garden, basil, missing = plan.terms
    assert (garden.cards, basil.cards, missing.cards) == (9, 2, 0)
    assert garden.weight < basil.weight < missing.weight
    assert plan.cards == 9


LIBRARY = [
    "Tuning Postgres autovacuum for the garden database",
    "Sourdough starter routine, taxes and the kubernetes cluster",
    "The garden of basil and pesto",
    "What is the point of it all",
    "e-mail from example.com about taxes",
]
WORDS = ["autovacuum", "garden", "kubernetes", "taxes", "sourdough", "basil", "postgres", "example"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=queries(WORDS))
def test_a_random_q_up_to_its_maxlength_plans_and_lists(database: Database, account_id: str, q: str) -> None:
    """Any q the spec allows (1,024 characters of stop words, phrases, OR, qualifiers, typos
    mixed) plans and lists every page of its cards, in both orders, without an error, each
    card once and as many as the total says."""
    with database.transaction() as session:
        if not session.execute(text("SELECT 1 FROM cards WHERE account_id = :a"), {"a": account_id}).first():
            for i, content in enumerate(LIBRARY):
                tags = ["work"] if i % 2 else []
                editing.add_card(session, account_id=account_id, content=content, tags=tags)
    query = parse(q)
    if query.has_words:
        with database.transaction(write=False) as session:
            plan = planning.plan(session, account_id, query)
        assert len(plan.terms) == len(plan.query.required) <= MAX_WORDS
        assert all(term.weight >= 0 and 0 <= term.cards <= plan.cards for term in plan.terms)
    for sort in ("relevance", "newest"):
        pages = _walk(database, account_id, CardFilter(q=q, sort=sort), limit=2, with_total=True)
        listed = [card.id for page in pages for card in page.cards]
        assert len(listed) == len(set(listed)) <= len(LIBRARY)
        assert {page.total for page in pages} == {len(listed)}  # the pages follow one another
