"""The ``capture`` stage's outcomes that need no browser to run: skipped when capture is off or
no browser is installed, and given back uncounted when every capture slot of the process is
taken (the browser tier, tests/browser/test_capture.py, captures pages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardvault.domain.db import Database
from cardvault.workers import broker
from cardvault.workers.pipeline import ACTORS
from cardvault.workers.stages import capture
from harness.servers import PageServer
from tests.unit.workers.stages.conftest import ARTICLE, bind, link, stages


def _read_page(database: Database, account_id: str, pages: PageServer) -> int:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pk = link(database, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)
    return pk


def test_with_capture_off_the_stage_is_skipped_and_the_ai_follows(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    bind(tmp_path, database, pages)
    pk = _read_page(database, account_id, pages)
    ACTORS["capture"](pk)
    assert stages(database, pk)["capture"] == ("skipped", 1, "CAPTURE_OFF")
    assert broker.broker.queues["files"].qsize() >= 1  # type: ignore[attr-defined]  # the ai stage, sent


def test_without_a_browser_the_stage_is_skipped(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer
) -> None:
    missing = str(tmp_path / "no-chromium")
    bind(tmp_path, database, pages, CARDVAULT_CAPTURE="true", CARDVAULT_CAPTURE_BROWSER=missing)
    pk = _read_page(database, account_id, pages)
    ACTORS["capture"](pk)
    assert stages(database, pk)["capture"] == ("skipped", 1, "NO_BROWSER")


def test_a_capture_finding_every_slot_taken_gives_its_thread_back_uncounted(
    tmp_path: Path, database: Database, account_id: str, pages: PageServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "chromium"
    program.write_text("#!/bin/sh\nexit 1\n")  # never started: the slot is taken first
    program.chmod(0o700)
    bind(tmp_path, database, pages, CARDVAULT_CAPTURE="true", CARDVAULT_CAPTURE_BROWSER=str(program))
    monkeypatch.setattr(capture, "CAPTURE_WAIT", 0.05)
    pk = _read_page(database, account_id, pages)
    browser = broker.services_of(broker.broker).capture_browser()
    assert browser is not None and browser._slots.acquire(timeout=1)  # another capture runs
    try:
        ACTORS["capture"](pk)
    finally:
        browser._slots.release()
    assert stages(database, pk)["capture"] == ("pending", 0, "CAPTURE_BUSY")
    assert broker.broker.queues["captures.DQ"].qsize() == 1  # type: ignore[attr-defined]
