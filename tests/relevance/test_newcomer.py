"""A newcomer's first library (issue 43): four text cards, searched as a new user types, each
query finding its card first, on both databases. Each asks for something ``q`` must do beyond
matching words by their start:

- ``taxes`` for "Tax pot": another form of the word (a stem, or the plural's stem);
- ``postgres vacuum`` for "Tuning Postgres autovacuum": a word inside a compound (neither a
  prefix of it nor its stem: a match inside the word, or the compound split);
- ``espresso grinding`` and ``brewing espresso`` for "dialing in grind size and brew ratio":
  the -ing forms of the card's words (stems);
- ``kubernets`` for "Kubernetes operators": one letter missing (a typo);
- ``how do I tune autovacuum in postgres`` for the Postgres card: a question, whose stop words
  and other form (tune, Tuning) must not empty the page."""

from __future__ import annotations

import pytest

from cardvault.domain.cards import editing, listing
from cardvault.domain.db import Database

CARDS = {
    "tax": "Tax pot\n30% of every invoice goes into the savings account the day it is paid.",
    "postgres": "Tuning Postgres autovacuum\nPer-table settings for the big tables; watch the dead tuples.",
    "espresso": "Espresso at home: dialing in grind size and brew ratio\n18 g in, 36 g out, 28 s.",
    "kubernetes": "Kubernetes operators\nControllers that run an application's day-two chores.",
}


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("tax pot", "tax"),  # what today's prefix matching finds: the library is searched at all
        ("taxes", "tax"),
        ("postgres vacuum", "postgres"),
        ("espresso grinding", "espresso"),
        ("brewing espresso", "espresso"),
        ("kubernets", "kubernetes"),
        ("how do I tune autovacuum in postgres", "postgres"),
    ],
)
def test_a_newcomers_query_finds_its_card_first(
    database: Database, account_id: str, q: str, expected: str
) -> None:
    keys = {}
    for key, content in CARDS.items():
        with database.transaction() as session:
            keys[editing.add_card(session, account_id=account_id, content=content).card.pk] = key
    with database.transaction(write=False) as session:
        page = listing.list_cards(
            session, account_id=account_id, secret="s" * 48, filters=listing.CardFilter(q=q), limit=10
        )
    found = [keys[card.pk] for card in page.cards]
    assert found[:1] == [expected], f"{q!r} found {found}"
