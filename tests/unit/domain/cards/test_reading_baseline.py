"""The benchmark's baseline (harness/baseline.py, bench/bench_cards.py) sends the statements
the API sends for one card and for a page of cards: when the API's SQL changes, this fails, so
the benchmark never compares the API with a cheaper query than its own."""

from __future__ import annotations

from cardvault.domain.db import Database
from harness import baseline
from tests.conftest import Api
from tests.unit.domain.cards.test_reading import statements


def _words(sql: str) -> str:
    return " ".join(sql.split())


def _card_statements(sent: list[str]) -> list[str]:
    # The card views' statements (the card's pipeline, on the embedded worker's threads, reads
    # the card too, without its tags and folders).
    return [_words(s) for s in sent if " AS tag_list" in s]


def test_the_baseline_sends_the_apis_statement_for_a_card_and_for_a_page(
    api: Api, database: Database
) -> None:
    dialect = database.engine.dialect.name
    card = api.create(content="a card to read", tags=["read"])
    assert api.get("/v1/cards").status_code == 200  # the key verified and cached, as in the bench

    stop = statements(database)
    assert api.get(f"/v1/cards/{card['id']}").status_code == 200
    sent_for_card = _card_statements(stop())
    stop = statements(database)
    assert api.get("/v1/cards", params={"limit": 50}).status_code == 200
    sent_for_page = _card_statements(stop())

    assert sent_for_card == [_words(baseline.card_sql(dialect))]
    assert sent_for_page == [_words(baseline.page_sql(dialect))]
