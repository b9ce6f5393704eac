"""The card page behind appUrl: its owner sees the card, rendered safely; anyone signed out is
sent to sign in; another account's card answers like a missing one."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from cardvault.domain import folders
from cardvault.domain.auth import keys
from cardvault.domain.cards import editing, trash
from cardvault.domain.db import Database
from tests.unit.handlers.web.conftest import Person, sign_in

_HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](vbscript:msgbox(1))",
    "![x](javascript:alert(1))",
    '<a href="javascript:alert(1)">a</a>',
    "<svg onload=alert(1)>",
    "<iframe src=https://evil.example></iframe>",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<style>body{display:none}</style>",
    '"><script>alert(1)</script>',
]


def _card(database: Database, account_id: str, **fields: object) -> str:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, **fields).card.id  # type: ignore[arg-type]


class TestCardPage:
    def test_the_owner_sees_title_content_tags_and_folders(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        card_id = _card(
            database,
            person.account_id,
            content="# Reading list\n\n**Bold** and *soft*.",
            tags=["books", "later"],
        )
        with database.transaction() as session:
            folder = folders.create_folder(session, account_id=person.account_id, name="Evening")
            folders.add_cards(session, account_id=person.account_id, folder_id=folder.id, card_ids=[card_id])
        sign_in(browser, person)
        page = browser.get(f"/cards/{card_id}")
        assert page.status_code == 200
        assert "<h1>Reading list</h1>" in page.text
        assert "<strong>Bold</strong>" in page.text and "<em>soft</em>" in page.text
        assert "<li>books</li>" in page.text and "<li>later</li>" in page.text
        assert "<li>Evening</li>" in page.text
        assert "<script" not in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]

    def test_the_api_appurl_opens_this_page(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        with database.transaction() as session:
            key = keys.issue_api_key(session, account_id=person.account_id)
        created = browser.post(
            "/v1/cards", json={"content": "from the API"}, headers={"Authorization": f"Bearer {key}"}
        )
        path = urlsplit(created.json()["appUrl"]).path
        sign_in(browser, person)
        assert "from the API" in browser.get(path).text

    @pytest.mark.parametrize("content", _HOSTILE)
    def test_markdown_never_lets_html_or_scripts_through(
        self, browser: TestClient, person: Person, database: Database, content: str
    ) -> None:
        card_id = _card(
            database, person.account_id, content=f"Before\n\n{content}\n\nAfter", card_type="text"
        )
        sign_in(browser, person)
        page = browser.get(f"/cards/{card_id}")
        assert page.status_code == 200
        body = page.text.split('<div class="content">', 1)[1].split("</div>", 1)[0]
        elements = _elements(body)
        assert {tag for tag, _ in elements} <= {"p", "a", "img", "code", "em", "strong"}, body
        for _, attributes in elements:
            for name, value in attributes:
                assert not name.startswith("on"), body
                if name in ("href", "src"):
                    assert (value or "").startswith(("http://", "https://", "mailto:", "/", "#")), body
        assert "Before" in body and "After" in body

    def test_a_quote_a_palette_and_a_link_render_their_own_way(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        quote = _card(
            database, person.account_id, content='"Simplicity is prerequisite for reliability." — Dijkstra'
        )
        palette = _card(database, person.account_id, content="#ff0000 rebeccapurple")
        link = _card(database, person.account_id, url="https://example.com/article")
        sign_in(browser, person)
        assert "Simplicity is prerequisite for reliability." in browser.get(f"/cards/{quote}").text
        palette_page = browser.get(f"/cards/{palette}").text
        assert "rebeccapurple" in palette_page and 'src="data:image/svg+xml,' in palette_page
        link_page = browser.get(f"/cards/{link}").text
        assert '<a href="https://example.com/article" rel="noopener noreferrer nofollow">' in link_page

    def test_a_signed_out_browser_is_sent_to_sign_in_and_back(
        self, browser: TestClient, person: Person, database: Database
    ) -> None:
        card_id = _card(database, person.account_id, content="secret")
        response = browser.get(f"/cards/{card_id}")
        assert response.status_code == 303
        assert response.headers["location"] == f"/sign-in?next=%2Fcards%2F{card_id}"
        assert "secret" not in response.text

    def test_another_accounts_card_answers_like_a_missing_one(
        self, browser: TestClient, make_person: Callable[[], Person], database: Database
    ) -> None:
        owner, other = make_person(), make_person()
        card_id = _card(database, owner.account_id, content="owner's words")
        sign_in(browser, other)
        theirs = browser.get(f"/cards/{card_id}")
        missing = browser.get("/cards/crd_doesnotexist")
        malformed = browser.get("/cards/not%20an%20id")
        assert theirs.status_code == missing.status_code == malformed.status_code == 404
        assert "owner's words" not in theirs.text
        assert _without_token(theirs.text) == _without_token(missing.text)

    def test_cards_in_trash_say_so(self, browser: TestClient, person: Person, database: Database) -> None:
        card_id = _card(database, person.account_id, content="gone soon")
        with database.transaction() as session:
            trash.move_to_trash(session, account_id=person.account_id, card_id=card_id)
        sign_in(browser, person)
        assert "In Trash" in browser.get(f"/cards/{card_id}").text


def _elements(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every element a browser would build from ``html``, with its attributes."""
    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Collector().feed(html)
    return found


def _without_token(html: str) -> str:
    return re.sub(r'name="csrf" value="[0-9a-f]+"', "", html)
