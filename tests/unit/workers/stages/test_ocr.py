"""The ``ocr`` stage (the ocr extra: Tesseract and Debian's English language file), on each
database: printed words in an uploaded PNG, a JPEG and a scanned (image-only) PDF page become
the card's searchable ``fileText``, read by the AI stage; a photo without text gives an empty
one; the stage is skipped with a code when OCR is off or its engine is missing; a refresh reads
it again; Trash hides it from search; an export keeps it and an import restores it unread."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.domain.portability import archive
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness import text_pictures
from tests.conftest import Api, api_of_new_account, app_env
from tests.ocr_extra import require_ocr
from tests.unit.handlers.cli.test_restore import _card, make_archive
from tests.unit.handlers.test_imports import imported
from tests.unit.handlers.test_uploads import processed
from tests.unit.workers.stages.test_media import file_card, stages

FIRST = ["harbour", "receipt", "invoice", "kitchen", "planet", "silver"]
SECOND = ["market", "library", "journal", "museum", "platform", "orange"]

OcrApi = Callable[..., Api]


@pytest.fixture
def ocr_api(tmp_path: Path, database: Database) -> Iterator[OcrApi]:
    """An account on an app with OCR on (and whatever settings are given)."""
    require_ocr()
    clients: list[TestClient] = []

    def make(**env: str) -> Api:
        settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_OCR": "true", **env})
        client = TestClient(create_app(settings, database), raise_server_exceptions=False)
        clients.append(client.__enter__())
        return api_of_new_account(client, database, f"ocr{len(clients)}")

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def picture_of(words: list[str], kind: str, **drawn: Any) -> bytes:
    return text_pictures.encoded(text_pictures.printed(words * 2, **drawn), kind)


def found(api: Api, q: str) -> list[str]:
    return [c["id"] for c in api.get("/v1/cards", params={"q": q}).json()["items"]]


def ocr_stage(card: dict[str, Any]) -> tuple[str, str, str | None]:
    (stage,) = [s for s in stages(card) if s[0] == "ocr"]
    return stage


class TestPrintedWords:
    @pytest.mark.parametrize(("kind", "mime", "noise"), [("png", "image/png", 0), ("jpeg", "image/jpeg", 25)])
    def test_the_words_of_an_image_are_its_searchable_file_text(
        self, ocr_api: OcrApi, kind: str, mime: str, noise: int
    ) -> None:
        api = ocr_api(CARDVAULT_AI="true")
        card_id = file_card(api, picture_of(FIRST, kind, noise=noise), f"scan.{kind}", mime)
        card = processed(api, card_id)
        assert stages(card) == [
            ("renditions", "completed", None),
            ("ocr", "completed", None),
            ("ai", "completed", None),  # it describes the words read, not the name alone
        ]
        assert set(FIRST) <= set(card["fileText"].lower().split())
        reader = card["processingStatus"]["ocr"]
        assert reader["engine"].startswith("tesseract 5") and reader["languages"] == ["eng"]
        assert found(api, "invoice kitchen") == [card_id]
        listed = api.get("/v1/cards", params={"q": "kitchen", "include": "highlights"}).json()["items"]
        (fragment, *_) = listed[0]["highlights"]["fileText"]
        (match, *_) = fragment["matches"]
        assert fragment["text"][match["start"] : match["end"]].lower() == "kitchen"

    def test_a_scanned_pdf_page_is_read_as_a_picture(self, ocr_api: OcrApi) -> None:
        api = ocr_api()
        card_id = file_card(api, picture_of(SECOND, "pdf", size=32), "scan.pdf", "application/pdf")
        card = processed(api, card_id)
        assert ocr_stage(card) == ("ocr", "completed", None)
        assert set(SECOND) <= set(card["fileText"].lower().split())
        assert card["processingStatus"]["ocr"]["pages"] == 1
        assert found(api, "museum") == [card_id]

    def test_a_photo_without_text_gives_an_empty_file_text(self, ocr_api: OcrApi) -> None:
        api = ocr_api()
        data = text_pictures.encoded(text_pictures.photo(), "jpeg")
        card = processed(api, file_card(api, data, "beach.jpg", "image/jpeg"))
        assert ocr_stage(card) == ("ocr", "completed", None)
        assert card["fileText"] == ""  # nothing read above the confidence threshold


class TestSkipped:
    def test_ocr_off_skips_the_stage(self, ocr_api: OcrApi) -> None:
        api = ocr_api(CARDVAULT_OCR="false")
        card = processed(api, file_card(api, picture_of(FIRST, "png"), "scan.png", "image/png"))
        assert ocr_stage(card) == ("ocr", "skipped", "OCR_OFF")
        assert card["fileText"] is None and "ocr" not in card["processingStatus"]
        assert found(api, "invoice") == []

    def test_a_missing_engine_skips_the_stage(self, ocr_api: OcrApi, tmp_path: Path) -> None:
        empty = tmp_path / "no-language-files"
        empty.mkdir()
        for env in ({"CARDVAULT_OCR_TESSDATA": str(empty)}, {"CARDVAULT_OCR_LANGUAGES": "xyz"}):
            api = ocr_api(**env)
            card = processed(api, file_card(api, picture_of(FIRST, "png"), "scan.png", "image/png"))
            assert ocr_stage(card) == ("ocr", "skipped", "NO_OCR_ENGINE")
            assert card["fileText"] is None


class TestLifecycle:
    def test_a_refresh_reads_the_picture_again(self, ocr_api: OcrApi) -> None:
        api = ocr_api()
        card_id = file_card(api, picture_of(FIRST, "png"), "scan.png", "image/png")
        first = processed(api, card_id)
        before = next(s for s in first["processingStatus"]["stages"] if s["name"] == "ocr")["completedAt"]
        assert api.post(f"/v1/cards/{card_id}/refresh").status_code == 202
        again = processed(api, card_id)
        (stage,) = [s for s in again["processingStatus"]["stages"] if s["name"] == "ocr"]
        assert (stage["state"], stage["attempts"]) == ("completed", 1) and stage["completedAt"] > before
        assert again["fileText"] == first["fileText"]

    def test_a_card_in_trash_is_not_found_until_it_is_restored(self, ocr_api: OcrApi) -> None:
        api = ocr_api()
        card_id = file_card(api, picture_of(FIRST, "png"), "scan.png", "image/png")
        processed(api, card_id)
        assert api.post(f"/v1/cards/{card_id}/trash").status_code == 200
        assert found(api, "planet") == []
        assert api.post(f"/v1/cards/{card_id}/restore").status_code == 200
        assert found(api, "planet") == [card_id]

    def test_the_changes_feed_shows_the_file_text(self, ocr_api: OcrApi) -> None:
        api = ocr_api()
        card_id = file_card(api, picture_of(FIRST, "png"), "scan.png", "image/png")
        card = processed(api, card_id)
        items = api.get("/v1/changes").json()["items"]
        (shown,) = [i["card"] for i in items if i["type"] == "card" and i["id"] == card_id]
        assert shown["fileText"] == card["fileText"] and shown["processingStatus"]["ocr"]

    def test_an_export_keeps_the_file_text_and_an_import_restores_it_unread(
        self, ocr_api: OcrApi, database: Database, tmp_path: Path
    ) -> None:
        api = ocr_api()
        card_id = file_card(api, picture_of(FIRST, "png"), "scan.png", "image/png")
        card = processed(api, card_id)
        with database.transaction(write=False) as session:
            row = session.scalars(select(Card).where(Card.id == card_id)).one()
            record = archive.card_record(row)
        assert record["fileText"] == card["fileText"]
        assert record["fileTextRead"] == card["processingStatus"]["ocr"]
        # The archive's text is not what the picture says: an import that read it again would differ.
        kept = {**record, "fileText": "restored words only", "id": "crd_7"}
        picture = {"path": "files/crd_7/scan.png"}
        data = make_archive(
            tmp_path / "export.zip",
            [_card(7, **{k: v for k, v in kept.items() if k in _RESTORED}, file=picture)],
            {"files/crd_7/scan.png": picture_of(FIRST, "png")},
        ).read_bytes()
        other = ocr_api()
        assert imported(other, data)["created"] == 1
        (restored,) = other.get("/v1/cards").json()["items"]
        again = processed(other, restored["id"])
        (stage,) = [s for s in again["processingStatus"]["stages"] if s["name"] == "ocr"]
        assert (stage["state"], stage["attempts"]) == ("completed", 0)
        assert again["fileText"] == "restored words only"
        assert again["processingStatus"]["ocr"] == record["fileTextRead"]
        assert [c["id"] for c in other.get("/v1/cards", params={"q": "restored"}).json()["items"]] == [
            restored["id"]
        ]

    def test_an_import_whose_reader_facts_do_not_hold_reads_the_picture_again(
        self, ocr_api: OcrApi, tmp_path: Path
    ) -> None:
        record = {
            "type": "image",
            "content": "",
            "fileName": "scan.png",
            "mimeType": "image/png",
            "fileText": "words no picture says",
            "fileTextRead": {"engine": 7, "languages": "eng"},  # not an OcrReader
        }
        data = make_archive(
            tmp_path / "export.zip",
            [_card(8, **record, file={"path": "files/crd_8/scan.png"})],
            {"files/crd_8/scan.png": picture_of(SECOND, "png")},
        ).read_bytes()
        api = ocr_api()
        assert imported(api, data)["created"] == 1
        (restored,) = api.get("/v1/cards").json()["items"]
        card = processed(api, restored["id"])
        assert ocr_stage(card) == ("ocr", "completed", None)
        assert "museum" in card["fileText"].lower() and "picture says" not in card["fileText"]


_RESTORED = ("type", "content", "fileName", "mimeType", "fileText", "fileTextRead")
