"""The card page marks each annotation's quote in a text card's text and lists every
annotation with its note, escaped like the rest of the card."""

from __future__ import annotations

from types import SimpleNamespace

from starlette.testclient import TestClient

from cardvault.domain.annotations import records
from cardvault.domain.db import Database
from cardvault.handlers.web.card_page import marked
from tests.unit.handlers.web.conftest import Person, sign_in
from tests.unit.handlers.web.test_card_page import _card


def test_quotes_are_marked_in_the_text_and_listed_with_their_notes(
    browser: TestClient, person: Person, database: Database
) -> None:
    card_id = _card(
        database, person.account_id, content="# Tides\n\nHigh water comes **twice** a day, mostly."
    )
    with database.transaction() as session:
        records.create(session, account_id=person.account_id, card_id=card_id, quote="High water comes")
        records.create(
            session, account_id=person.account_id, card_id=card_id, quote="a day", note="<b>check</b> tables"
        )
    sign_in(browser, person)
    page = browser.get(f"/cards/{card_id}")
    assert page.status_code == 200
    assert (
        "<p><mark>High water comes</mark> <strong>twice</strong> <mark>a day</mark>, mostly.</p>" in page.text
    )
    assert '<section aria-label="Annotations">' in page.text
    assert "&lt;b&gt;check&lt;/b&gt; tables" in page.text and "<b>check</b>" not in page.text


def test_overlapping_quotes_and_ones_across_lines_are_not_marked() -> None:
    def placed(start: int, end: int) -> SimpleNamespace:
        return SimpleNamespace(source="text", start=start, end=end)

    text = "one two\nthree four"
    shown = marked(text, 0, [placed(0, 7), placed(4, 9), placed(8, 13)])  # type: ignore[list-item]
    assert shown == "\ue001one two\ue002\n\ue001three\ue002 four"
    assert marked(text, 0, [placed(5, 10)]) == text  # type: ignore[list-item]
