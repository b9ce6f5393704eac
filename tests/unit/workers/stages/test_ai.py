"""The ``ai`` stage run by its actor: what the offline engine writes on a card (summary, tags
snapped onto the account's tags, which engine), that it describes a link's page text once the
page was read, that a card changed meanwhile or refreshed keeps nothing of an old attempt, and
that a provider's bad answer fails the stage without writing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cardvault.bootstrap import bootstrap
from cardvault.domain.cards import editing, listing
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline import processing
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers.pipeline import ACTORS, TryAgain
from harness.servers import PageServer, page_server
from tests.conftest import app_env

SOURDOUGH = (
    "Sourdough bread rises with a starter of wild yeast and lactic bacteria instead of baker's yeast. "
    "A healthy sourdough starter doubles within six hours of feeding at room temperature. "
    "Bakers feed the starter with equal weights of flour and water every day. "
    "The long fermentation gives sourdough bread its sour taste and open crumb. "
    "Whole wheat flour makes the starter more active than white flour. "
    "A sourdough loaf bakes best in a hot Dutch oven with the lid on for the first twenty minutes."
)


def bind(tmp_path: Path, database: Database, **env: str) -> Settings:
    settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_AI": "true", **env})
    bootstrap(settings, database=database)
    broker.broker.flush_all()
    return settings


@pytest.fixture
def bound(tmp_path: Path, database: Database) -> Database:
    bind(tmp_path, database)
    return database


def add(db: Database, account: str, content: str, **fields: Any) -> int:
    with db.transaction() as session:
        card = editing.add_card(session, account_id=account, content=content, card_type="text", **fields).card
        assert processing.queue(session, card) == ("ai",)
        return card.pk


def stage(db: Database, pk: int, name: str = "ai") -> tuple[str, int, str | None]:
    with db.transaction(write=False) as session:
        row = session.get(CardStage, (pk, name))
        assert row is not None
        return row.state, row.attempts, row.error_code


def read(db: Database, pk: int) -> Card:
    with db.transaction(write=False) as session:
        found = session.get(Card, pk)
        assert found is not None
        found.tags, found.ai_tags  # noqa: B018 (loaded before it leaves the session)
        session.expunge(found)
        return found


def test_a_text_card_gets_a_summary_tags_and_the_engine(bound: Database, account_id: str) -> None:
    pk = add(bound, account_id, SOURDOUGH)
    ACTORS["ai"](pk)
    card = read(bound, pk)
    assert stage(bound, pk) == ("completed", 1, None)
    assert card.ai_engine == {"kind": "offline", "model": "textrank+yake", "language": "en"}
    assert card.ai_summary is not None and card.ai_summary.count(".") == 3
    assert all(sentence.strip() + "." in SOURDOUGH for sentence in card.ai_summary.split(".")[:-1])
    assert 1 <= len(card.ai_tags) <= 6 and any("sourdough" in tag for tag in card.ai_tags)
    assert card.tags == []  # the user's tags are not the AI's
    ACTORS["ai"](pk)  # a repeated message changes nothing
    assert read(bound, pk).updated_at == card.updated_at and stage(bound, pk) == ("completed", 1, None)


def test_the_summary_and_tags_are_searchable(bound: Database, account_id: str) -> None:
    pk = add(bound, account_id, SOURDOUGH)
    ACTORS["ai"](pk)
    card = read(bound, pk)
    assert card.ai_summary is not None
    assert search_for(bound, account_id, card.ai_tags[0].split()[0]) == [pk]


def test_keywords_take_the_accounts_spelling_and_leave_out_the_cards_own_tags(
    bound: Database, account_id: str
) -> None:
    with bound.transaction() as session:  # the account already tags with these spellings
        editing.add_card(
            session,
            account_id=account_id,
            content="x",
            card_type="text",
            tags=["Sourdough-Starter", "Flours"],
        )
    pk = add(bound, account_id, SOURDOUGH, tags=["Bread"])
    ACTORS["ai"](pk)
    tags = read(bound, pk).ai_tags
    assert "Flours" in tags and "flour" not in tags  # the account's spelling, plural and all
    assert "bread" not in [t.lower() for t in tags]  # the card's own tag


def test_a_short_text_gets_tags_but_no_summary(bound: Database, account_id: str) -> None:
    pk = add(bound, account_id, "Sourdough starter feeding schedule for the weekend bakes.")
    ACTORS["ai"](pk)
    card = read(bound, pk)
    assert card.ai_summary is None and card.ai_tags and stage(bound, pk) == ("completed", 1, None)


def test_an_empty_text_is_skipped(bound: Database, account_id: str) -> None:
    pk = add(bound, account_id, "   ")
    ACTORS["ai"](pk)
    assert stage(bound, pk) == ("skipped", 1, "NO_TEXT")
    assert read(bound, pk).ai_engine is None


def test_with_ai_off_the_stage_is_skipped(tmp_path: Path, database: Database, account_id: str) -> None:
    bind(tmp_path, database, CARDVAULT_AI="false")
    pk = add(database, account_id, SOURDOUGH)
    ACTORS["ai"](pk)
    assert stage(database, pk) == ("skipped", 1, "AI_OFF")
    assert read(database, pk).ai_summary is None


def test_content_changed_while_the_stage_ran_keeps_nothing_and_queues_it_again(
    bound: Database, account_id: str
) -> None:
    pk = add(bound, account_id, SOURDOUGH)
    with bound.transaction() as session:  # a worker took the stage with the old content
        taken = processing.start(session, card_pk=pk, stage="ai", stale_before=0)
        assert isinstance(taken, processing.Taken)
        card_id = taken.card.id
    with bound.transaction() as session:
        edited = editing.edit_card(session, account_id=account_id, card_id=card_id, content="Tide tables.")
        assert edited.stages == ("ai",)
    assert stage(bound, pk) == ("pending", 0, None)
    ACTORS["ai"](pk)
    assert read(bound, pk).ai_summary is None  # the new, short text has none


def test_a_refresh_clears_the_fields_and_the_rerun_brings_them_back(bound: Database, account_id: str) -> None:
    pk = add(bound, account_id, SOURDOUGH)
    ACTORS["ai"](pk)
    first = read(bound, pk)
    with bound.transaction() as session:
        refreshed = editing.refresh(session, account_id=account_id, card_id=first.id)
        assert refreshed.stages == ("ai",)
    cleared = read(bound, pk)
    assert (cleared.ai_summary, cleared.ai_tags, cleared.ai_engine) == (None, [], None)
    ACTORS["ai"](pk)
    again = read(bound, pk)
    assert (again.ai_summary, again.ai_tags, again.ai_engine) == (
        first.ai_summary,
        first.ai_tags,
        first.ai_engine,
    )


def search_for(db: Database, account_id: str, q: str) -> list[int]:
    with db.transaction(write=False) as session:
        found = listing.list_cards(session, account_id=account_id, secret="s" * 48, filters=CardFilter(q=q))
    return [view.pk for view in found.cards]


# -- a link: the page's text, once it was read -------------------------------------------------

ARTICLE = f"""<!doctype html><html><head><meta charset="utf-8"><title>Baking notes</title>
<meta property="og:title" content="Why sourdough rises"></head>
<body><article><h1>Why sourdough rises</h1><p>{SOURDOUGH}</p>
<p>{SOURDOUGH.replace("Sourdough", "Rye sourdough")}</p></article></body></html>""".encode()


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        yield server


def test_a_link_is_described_from_its_page_text_after_the_page(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(
        tmp_path,
        database,
        CARDVAULT_FETCH_LINKS="true",
        CARDVAULT_TEST_FETCH_LOOPBACK="true",
        CARDVAULT_FETCH_PORTS=f"80,443,{pages.port}",
    )
    pages.routes["/bread"] = (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE)
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content=pages.url("/bread")).card
        assert processing.queue(session, card) == ("linkMetadata",)  # ai waits for the page
        pk = card.pk
    ACTORS["ai"](pk)  # early: nothing happens
    assert stage(database, pk) == ("pending", 0, None)
    ACTORS["linkMetadata"](pk)
    ACTORS["ai"](pk)  # early still: it waits for the capture
    assert stage(database, pk) == ("pending", 0, None)
    ACTORS["capture"](pk)  # skipped: the tests' settings capture nothing (CAPTURE_OFF)
    ACTORS["ai"](pk)
    described = read(database, pk)
    assert stage(database, pk) == ("completed", 1, None)
    assert described.ai_summary is not None and "starter" in described.ai_summary
    assert any("sourdough" in tag for tag in described.ai_tags)


# -- a provider ----------------------------------------------------------------------------------


def answering(answer: Any, status: int = 200) -> Any:
    def route(*_: Any, **__: Any) -> tuple[int, dict[str, str], bytes]:
        content = answer if isinstance(answer, str) else json.dumps(answer)
        body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        return status, {"Content-Type": "application/json"}, json.dumps(body).encode()

    return route


def test_a_providers_answer_is_kept_with_its_model(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/v1/chat/completions"] = answering(
        {
            "summary": " On leavening with wild yeast. ",
            "tags": ["Sourdough", "baking", "sourdough", "\u202eevil", "nul\u0000"],  # (tags it may not give)
            "language": "en",
        }
    )
    bind(tmp_path, database, CARDVAULT_AI_BASE_URL=pages.url("/v1"), CARDVAULT_AI_MODEL="stub-1")
    pk = add(database, account_id, SOURDOUGH)
    ACTORS["ai"](pk)
    card = read(database, pk)
    assert (card.ai_summary, card.ai_tags) == ("On leavening with wild yeast.", ["sourdough", "baking"])
    assert card.ai_engine == {"kind": "provider", "model": "stub-1", "language": "en"}
    assert search_for(database, account_id, "leavening") == [pk]  # the summary finds the card
    with database.transaction() as session:
        editing.refresh(session, account_id=account_id, card_id=card.id)
    assert search_for(database, account_id, "leavening") == []  # cleared, and out of the index
    asked = json.loads(pages.posted[0])
    assert asked["model"] == "stub-1" and SOURDOUGH in asked["messages"][1]["content"]


def test_a_providers_bad_answer_fails_the_stage_and_writes_nothing(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/v1/chat/completions"] = answering({"summary": "x", "tags": ["a"] * 7, "language": "en"})
    bind(tmp_path, database, CARDVAULT_AI_BASE_URL=pages.url("/v1"), CARDVAULT_AI_MODEL="stub-1")
    pk = add(database, account_id, SOURDOUGH)
    ACTORS["ai"](pk)
    card = read(database, pk)
    assert stage(database, pk) == ("failed", 1, "AI_BAD_ANSWER")
    assert (card.ai_summary, card.ai_tags, card.ai_engine) == (None, [], None)


def test_a_busy_provider_is_retried(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/v1/chat/completions"] = [
        (503, {}, b"busy"),
        answering({"summary": None, "tags": ["bread"], "language": None})(),
    ]
    bind(tmp_path, database, CARDVAULT_AI_BASE_URL=pages.url("/v1"), CARDVAULT_AI_MODEL="stub-1")
    pk = add(database, account_id, SOURDOUGH)
    with pytest.raises(TryAgain):
        ACTORS["ai"](pk)
    assert stage(database, pk) == ("pending", 1, "AI_UNAVAILABLE")
    ACTORS["ai"](pk)
    assert stage(database, pk) == ("completed", 2, None) and read(database, pk).ai_tags == ["bread"]
