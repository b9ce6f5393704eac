"""What a share's link opens without credentials: the page shows the shared cards and nothing
else of the account; the Atom and JSON feeds parse, keep their entry ids and answer 304; the
token is never logged."""

from __future__ import annotations

import json
import logging
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from cardvault.domain.db import Database
from cardvault.domain.models import Card
from tests.conftest import Api
from tests.unit.handlers.test_shares import make_folder, path, put_in, share


def summarize(database: Database, card_id: str, summary: str) -> None:
    """The AI stage's summary, written as the stage would (the tests run without AI)."""
    with database.transaction() as session:
        card = session.scalar(select(Card).where(Card.id == card_id))
        assert card is not None
        card.ai_summary = summary


def open_link(api: Api, url: str, **headers: str):  # type: ignore[no-untyped-def]
    return api.client.get(path(url), headers=headers)  # no Authorization: anyone holding the link


class TestSharePage:
    def test_a_folder_share_shows_its_cards_and_nothing_else(self, api: Api, database: Database) -> None:
        shown = api.create(content="Shown text card", notes="secret note one", tags=["books"])
        link = api.create(url="https://example.com/article", notes="secret note two")
        summarize(database, link["id"], "A summary.")
        other = api.create(content="Not in the folder", tags=["hidden-tag"])
        folder_id = make_folder(api, "Shared reading")
        other_folder = make_folder(api, "Private folder name")
        put_in(api, folder_id, shown["id"], link["id"])
        put_in(api, other_folder, shown["id"], other["id"])
        made = share(api, folderId=folder_id)
        page = open_link(api, made["url"])
        assert page.status_code == 200
        text = page.text
        assert "Shown text card" in text and "https://example.com/article" in text
        assert "A summary." in text and "books" in text and "Shared reading" in text
        for private in ("secret note", "Not in the folder", "hidden-tag", "Private folder name", other["id"]):
            assert private not in text
        assert "processing" not in text.lower() and "<script" not in text.lower()
        assert text.index(link["id"]) < text.index(shown["id"])  # newest first
        headers = page.headers
        assert headers["x-robots-tag"].startswith("noindex")
        assert headers["referrer-policy"] == "no-referrer"
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "script-src" not in headers["content-security-policy"]
        assert 'type="application/atom+xml"' in text and 'type="application/feed+json"' in text

    def test_a_card_share_shows_that_card_only(self, api: Api) -> None:
        card = api.create(content="The one card")
        api.create(content="Another card")
        page = open_link(api, share(api, cardId=card["id"])["url"])
        assert "The one card" in page.text and "Another card" not in page.text

    def test_notes_only_with_include_notes(self, api: Api) -> None:
        card = api.create(content="With notes", notes="my own note")
        assert "my own note" not in open_link(api, share(api, cardId=card["id"])["url"]).text
        assert "my own note" in open_link(api, share(api, cardId=card["id"], includeNotes=True)["url"]).text

    def test_pages_newest_first(self, api: Api) -> None:
        folder_id = make_folder(api)
        cards = [api.create(content=f"card number {i}")["id"] for i in range(55)]
        put_in(api, folder_id, *cards)
        first = open_link(api, share(api, folderId=folder_id)["url"])
        assert cards[-1] in first.text and cards[0] not in first.text
        older = first.text.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
        second = api.client.get(older)
        assert cards[0] in second.text and cards[-1] not in second.text

    def test_a_card_outside_the_share_has_no_picture_or_file_url(self, api: Api) -> None:
        card = api.create(content="x")
        other = api.create(content="y")
        base = path(share(api, cardId=card["id"])["url"])
        assert api.client.get(f"{base}/cards/{other['id']}/picture").status_code == 404
        assert api.client.get(f"{base}/cards/{card['id']}/file").status_code == 404  # it has none


class TestTokenNeverLogged:
    def test_request_logs_hold_no_token(self, api: Api, caplog: pytest.LogCaptureFixture) -> None:
        made = share(api, cardId=api.create(content="x")["id"])
        token = urlsplit(made["url"]).path.removeprefix("/s/")
        from cardvault import logs

        with caplog.at_level(logging.INFO, logger="cardvault.requests"):
            open_link(api, made["url"])
            open_link(api, made["feedUrl"])
        lines = [r for r in caplog.records if r.name == "cardvault.requests"]
        assert lines and all(getattr(r, "operation", None) == "share" for r in lines[-2:])
        formatted = [logs.redact(r.getMessage() + json.dumps(getattr(r, "path", ""))) for r in lines]
        assert all(token not in line for line in formatted)
        assert logs.redact(f"GET /s/{token}/feed.atom") == "GET /s/[redacted]/feed.atom"
        assert logs.redact("GET /s/not-even-a-token") == "GET /s/[redacted]"
