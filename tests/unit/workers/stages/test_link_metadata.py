"""The ``linkMetadata`` stage run by its actor, one message at a time: what a page gives the
card, how failures are told apart (retried with the reason kept, or failed at once), and that only
the current attempt records its result."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline import processing
from cardvault.workers import broker
from cardvault.workers.pipeline import ACTORS, TryAgain
from harness.servers import PageServer
from tests.unit.workers.stages.conftest import ARTICLE, bind, card, link, png, stages


def test_a_page_fills_the_card_and_its_image_becomes_the_cards(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE)
    pages.routes["/cover.png"] = (200, {"Content-Type": "image/png"}, png())
    pk = link(bound, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)
    read = card(bound, pk)
    assert read.metadata_title == "Reading tide tables"
    assert read.link_meta is not None
    assert (read.link_meta["siteName"], read.link_meta["author"]) == ("Harbour Notes", "Ann Lee")
    assert read.link_meta["publishedAt"] == "2026-03-14T07:30:00Z"
    assert read.link_meta["category"] == "article"
    assert stages(bound, pk)["linkMetadata"] == ("completed", 1, None)
    queued = [m.decode() for m in broker.broker.queues["files"].queue]  # type: ignore[attr-defined]
    assert any('"link_preview_stage"' in m for m in queued)  # the stage that waited for it was sent
    ACTORS["linkPreview"](pk)
    shown = card(bound, pk)
    assert shown.thumbnail_object and shown.compact_object and shown.placeholder_object
    assert stages(bound, pk)["linkPreview"] == ("completed", 1, None)
    ACTORS["linkPreview"](pk)  # a repeated message changes nothing
    assert card(bound, pk).thumbnail_object == shown.thumbnail_object
    assert pages.hits == {"/tides": 1, "/cover.png": 1}


def test_a_server_error_is_retried_with_its_reason_kept_then_fails_for_good(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/busy"] = (503, {"Content-Type": "text/plain"}, b"busy")
    pk = link(bound, account_id, pages.url("/busy"))
    for attempt in range(1, processing.MAX_ATTEMPTS):
        with pytest.raises(TryAgain):
            ACTORS["linkMetadata"](pk)
        assert stages(bound, pk)["linkMetadata"] == ("pending", attempt, "SOURCE_UNAVAILABLE")
    ACTORS["linkMetadata"](pk)  # the last attempt fails for good, with the reason
    assert stages(bound, pk)["linkMetadata"] == ("failed", processing.MAX_ATTEMPTS, "SOURCE_UNAVAILABLE")
    ACTORS["linkPreview"](pk)
    assert stages(bound, pk)["linkPreview"] == ("skipped", 0, "NO_PAGE")
    assert pages.hits["/busy"] == processing.MAX_ATTEMPTS


def test_a_server_that_recovers_completes_the_stage(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/flaky"] = [
        (500, {}, b"oops"),
        (200, {"Content-Type": "text/html"}, ARTICLE),
    ]
    pk = link(bound, account_id, pages.url("/flaky"))
    with pytest.raises(TryAgain):
        ACTORS["linkMetadata"](pk)
    ACTORS["linkMetadata"](pk)
    assert stages(bound, pk)["linkMetadata"] == ("completed", 2, None)
    assert card(bound, pk).metadata_title == "Reading tide tables"


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ((404, {}, b"gone"), "SOURCE_NOT_FOUND"),
        ((410, {}, b"gone"), "SOURCE_NOT_FOUND"),
        ((403, {}, b"no"), "SOURCE_REFUSED"),
        ((302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""), "BLOCKED_ADDRESS"),
    ],
    ids=["404", "410", "403", "redirect-to-metadata"],
)
def test_a_failure_no_retry_can_help_fails_at_once(
    bound: Database, account_id: str, pages: PageServer, answer: tuple[int, dict[str, str], bytes], code: str
) -> None:
    pages.routes["/page"] = answer
    pk = link(bound, account_id, pages.url("/page"))
    ACTORS["linkMetadata"](pk)
    assert stages(bound, pk)["linkMetadata"] == ("failed", 1, code)
    assert card(bound, pk).link_meta is None
    assert pages.hits["/page"] == 1


def test_loopback_is_refused_without_the_test_setting(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages, CARDVAULT_TEST_FETCH_LOOPBACK="false")
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pk = link(database, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)
    assert stages(database, pk)["linkMetadata"] == ("failed", 1, "BLOCKED_ADDRESS")
    assert pages.hits == {}  # refused before any connection


def test_with_fetching_off_the_link_stages_are_skipped(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages, CARDVAULT_FETCH_LINKS="false")
    pk = link(database, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)
    ACTORS["linkPreview"](pk)
    ACTORS["capture"](pk)
    assert stages(database, pk) == {
        "linkMetadata": ("skipped", 1, "FETCHING_OFF"),
        "linkPreview": ("skipped", 0, "NO_PAGE"),
        "capture": ("skipped", 0, "NO_PAGE"),
        "ocr": ("pending", 0, None),  # sent after the capture (then skipped: no screenshot)
        "ai": ("pending", 0, None),  # sent after the capture, to describe what there is
    }
    assert pages.hits == {}


def test_an_attempt_outrun_by_a_refresh_records_nothing(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pk = link(bound, account_id, pages.url("/tides"))
    with bound.transaction() as session:  # a worker took the stage, and then went quiet
        assert processing.start(session, card_pk=pk, stage="linkMetadata", stale_before=0) is not None
        card_id = session.get(Card, pk).id  # type: ignore[union-attr]
    with bound.transaction() as session:
        editing.refresh(session, account_id=account_id, card_id=card_id)
    with bound.transaction() as session:  # the old attempt's lease no longer holds
        row = session.get(CardStage, (pk, "linkMetadata"))
        assert row is not None and (row.state, row.attempts, row.lease) == ("pending", 0, None)
        assert not processing.finish(session, card_pk=pk, stage="linkMetadata", lease="old")
    ACTORS["linkMetadata"](pk)
    assert stages(bound, pk)["linkMetadata"] == ("completed", 1, None)


def test_a_stage_whose_attempts_ran_out_fails_and_sends_the_one_waiting(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pk = link(bound, account_id, pages.url("/tides"))
    with bound.transaction() as session:  # five workers died holding it
        row = session.get(CardStage, (pk, "linkMetadata"))
        assert row is not None
        row.attempts, row.error_code = processing.MAX_ATTEMPTS, "FETCH_TIMEOUT"
    ACTORS["linkMetadata"](pk)
    assert stages(bound, pk)["linkMetadata"] == ("failed", processing.MAX_ATTEMPTS, "FETCH_TIMEOUT")
    queued = [m.decode() for m in broker.broker.queues["files"].queue]  # type: ignore[attr-defined]
    assert any('"link_preview_stage"' in m for m in queued)
    assert pages.hits == {}


def test_a_page_that_breaks_the_reader_fails_for_good(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/odd"] = (200, {"Content-Type": "text/html"}, b"<html><head><title>x</title></head></html>")
    pk = link(bound, account_id, pages.url("/odd"))
    with pytest.MonkeyPatch.context() as patch:  # the reader meets what it does not foresee
        patch.setattr("cardvault.adapters.pages.page_category", lambda *_: int("nope"))
        ACTORS["linkMetadata"](pk)
    assert stages(bound, pk)["linkMetadata"] == ("failed", 1, "PAGE_UNREADABLE")
