"""The ``ocr`` stage of a link (its screenshot read when the page gave no text), driven one actor
at a time: the link's ai, which runs beside its ocr (both follow capture) and does not read the
words, keeps its result when the ocr records first; a later run that skips the ocr (the page has
text now, OCR is off, or nothing was captured) leaves the card no ``fileText`` of an earlier
one, and search no longer finds its words."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.domain.pipeline import processing
from cardvault.workers import broker
from cardvault.workers.pipeline import ACTORS
from harness import text_pictures
from harness.servers import PageServer
from tests.ocr_extra import require_ocr
from tests.unit.workers.stages.conftest import bind, card, link, png, stages
from tests.unit.workers.stages.test_ai import answering, search_for

WORDS = ["harbour", "receipt", "invoice", "kitchen", "planet", "silver"]
BARE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Harbour tides at dawn</title>
<meta name="description" content="When the water comes in over the harbour wall."></head>
<body></body></html>"""  # no text of its own: its screenshot is read
WORDY = b"""<!doctype html><html><head><meta charset="utf-8"><title>Harbour tides at dawn</title></head>
<body><article><p>High water comes twice a day over the old harbour wall.</p></article></body></html>"""
HTML = {"Content-Type": "text/html; charset=utf-8"}


@pytest.fixture(autouse=True)
def _ocr() -> None:
    require_ocr()


def captured(db: Database, account_id: str, pk: int, picture: bytes) -> None:
    """Record the card's capture as completed with a screenshot, as a browser's would (the
    tests' settings capture nothing)."""
    with db.transaction() as session:
        taken = processing.start(session, card_pk=pk, stage="capture", stale_before=0)
        assert isinstance(taken, processing.Taken)
        key = f"accounts/{account_id}/renditions/{taken.card.id}/{taken.lease}-screenshot.webp"
        broker.services_of(broker.broker).blobs.put(key, picture, content_type="image/png")
        session.execute(update(Card).where(Card.pk == pk).values(screenshot_object=key))
        assert processing.finish(session, card_pk=pk, stage="capture", lease=taken.lease)


def test_a_links_ai_keeps_its_result_when_its_ocr_records_first(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    answer = answering({"summary": "Tides over the harbour wall.", "tags": ["tides"], "language": "en"})
    asked, answered = threading.Event(), threading.Event()

    def provider(*args: Any, **kwargs: Any) -> Any:
        asked.set()  # the ai read the card and waits for its answer
        assert answered.wait(60)
        return answer(*args, **kwargs)

    pages.routes["/bare"] = (200, HTML, BARE)
    pages.routes["/v1/chat/completions"] = provider
    bind(
        tmp_path,
        database,
        pages,
        CARDVAULT_OCR="true",
        CARDVAULT_AI="true",
        CARDVAULT_AI_BASE_URL=pages.url("/v1"),
        CARDVAULT_AI_MODEL="stub-1",
    )
    pk = link(database, account_id, pages.url("/bare"))
    ACTORS["linkMetadata"](pk)
    captured(database, account_id, pk, png())  # a screenshot without words
    ai = threading.Thread(target=ACTORS["ai"], args=(pk,))
    ai.start()
    try:
        assert asked.wait(60)
        ACTORS["ocr"](pk)  # the ocr records while the ai waits
        assert stages(database, pk)["ocr"] == ("completed", 1, None)
    finally:
        answered.set()
        ai.join()
    read = card(database, pk)
    assert read.file_text == ""  # nothing read in the plain picture, but read
    assert stages(database, pk)["ai"] == ("completed", 1, None)  # not left running for the sweeper
    assert (read.ai_summary, read.ai_tags) == ("Tides over the harbour wall.", ["tides"])
    assert len(pages.posted) == 1  # one provider call


def read_from_its_screenshot(tmp_path: Path, database: Database, account_id: str, pages: PageServer) -> int:
    pages.routes["/page"] = (200, HTML, BARE)
    bind(tmp_path, database, pages, CARDVAULT_OCR="true")
    pk = link(database, account_id, pages.url("/page"))
    ACTORS["linkMetadata"](pk)
    captured(database, account_id, pk, text_pictures.encoded(text_pictures.printed(WORDS * 2), "png"))
    ACTORS["ocr"](pk)
    assert stages(database, pk)["ocr"] == ("completed", 1, None)
    assert "kitchen" in (card(database, pk).file_text or "").lower()
    assert search_for(database, account_id, "kitchen") == [pk]
    return pk


def refreshed(database: Database, account_id: str, pk: int) -> None:
    with database.transaction() as session:
        editing.refresh(session, account_id=account_id, card_id=card(database, pk).id)
    ACTORS["linkMetadata"](pk)


def forgotten(database: Database, account_id: str, pk: int, code: str) -> None:
    assert stages(database, pk)["ocr"] == ("skipped", 0 if code == "NO_PICTURE" else 1, code)
    read = card(database, pk)
    assert (read.file_text, read.ocr_facts) == (None, None)
    assert search_for(database, account_id, "kitchen") == []


def test_a_page_with_text_on_a_refresh_clears_the_words_read_before(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    pk = read_from_its_screenshot(tmp_path, database, account_id, pages)
    pages.routes["/page"] = (200, HTML, WORDY)
    refreshed(database, account_id, pk)
    captured(database, account_id, pk, text_pictures.encoded(text_pictures.printed(WORDS * 2), "png"))
    ACTORS["ocr"](pk)
    forgotten(database, account_id, pk, "HAS_TEXT")


def test_ocr_off_on_a_refresh_clears_the_words_read_before(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    pk = read_from_its_screenshot(tmp_path, database, account_id, pages)
    bind(tmp_path, database, pages, CARDVAULT_OCR="false")
    refreshed(database, account_id, pk)
    captured(database, account_id, pk, png())
    ACTORS["ocr"](pk)
    forgotten(database, account_id, pk, "OCR_OFF")


def test_no_capture_on_a_refresh_clears_the_words_read_before(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    pk = read_from_its_screenshot(tmp_path, database, account_id, pages)
    refreshed(database, account_id, pk)
    ACTORS["capture"](pk)  # skipped: the tests' settings capture nothing (CAPTURE_OFF)
    ACTORS["ocr"](pk)  # so the ocr is skipped without running
    forgotten(database, account_id, pk, "NO_PICTURE")
