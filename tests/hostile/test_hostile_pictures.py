"""Pictures made to be slow to read (huge dimensions, a page of tiny glyphs, pure noise) through
the ``ocr`` stage: each settles within the stage's limits (read, or failed with a code once the
OCR child's time is spent), none is left running, and the child reads the next picture after
them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.domain.pipeline.table import BY_NAME
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness import text_pictures
from tests.conftest import Api, api_of_new_account, app_env
from tests.ocr_extra import require_ocr
from tests.unit.workers.stages.test_media import file_card

SECONDS = 8  # CARDVAULT_OCR_SECONDS here: the tiny glyphs need more
LIMIT_MS = BY_NAME["ocr"].seconds * 1000  # one attempt's time limit


@pytest.fixture
def ocr_api(tmp_path: Path, database: Database) -> Iterator[Api]:
    require_ocr()
    env = {**app_env(tmp_path, database), "CARDVAULT_OCR": "true", "CARDVAULT_OCR_SECONDS": str(SECONDS)}
    with TestClient(create_app(Settings.from_env(env), database), raise_server_exceptions=False) as client:
        yield api_of_new_account(client, database, "slow-pictures")


def ocr_settled(api: Api, card_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 4 * LIMIT_MS / 1000  # (far past the limit: a stuck stage fails here)
    while True:
        card = api.get(f"/v1/cards/{card_id}/extended").json()
        (stage,) = [s for s in card["processingStatus"]["stages"] if s["name"] == "ocr"]
        if stage["state"] not in ("pending", "running"):
            return {"card": card, "stage": stage}
        assert time.monotonic() < deadline, stage
        time.sleep(0.2)


def test_slow_pictures_settle_within_the_stages_limits_and_the_child_reads_on(ocr_api: Api) -> None:
    made = {
        name: file_card(ocr_api, data, name, "image/png")
        for name, data in text_pictures.slow_pictures().items()
    }
    for name, card_id in made.items():
        settled = ocr_settled(ocr_api, card_id)
        stage, card = settled["stage"], settled["card"]
        assert (stage["state"], stage["errorCode"]) in (("completed", None), ("failed", "DECODE_TIMEOUT")), (
            name
        )
        assert stage["attempts"] == 1 and stage["completedAt"] - stage["startedAt"] < LIMIT_MS, name
        if name == "noise.png":
            assert card["fileText"] == ""  # noise read as letters is not text
        if name == "huge.png":  # scaled to 12 MP first: its one large line is still read
            assert "harbour" in card["fileText"].lower()
    data = text_pictures.encoded(text_pictures.printed(["kitchen", "receipt", "museum"] * 3), "png")
    after = ocr_settled(ocr_api, file_card(ocr_api, data, "after.png", "image/png"))
    assert after["stage"]["state"] == "completed" and "museum" in after["card"]["fileText"].lower()
