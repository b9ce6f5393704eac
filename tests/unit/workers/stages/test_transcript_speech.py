"""Speech recognition in the transcript stage (the asr extra), on each database and blob store:
a recording's words become its searchable transcript, a file without sound is skipped with a
reason, and a caption file still comes before it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness import media_files
from harness.media_files import FOX
from tests.conftest import Api, api_of_new_account, app_env
from tests.speech_extra import require_speech
from tests.unit.domain.cards.test_captions import VTT, attach
from tests.unit.handlers.test_uploads import processed
from tests.unit.workers.stages.test_media import file_card, stages


@pytest.fixture
def speech_api(tmp_path: Path, database: Database, storage: dict[str, str]) -> Iterator[Api]:
    require_speech()
    env = {**app_env(tmp_path, database), **storage, "CARDVAULT_SPEECH": "true"}
    with TestClient(create_app(Settings.from_env(env), database), raise_server_exceptions=False) as client:
        yield api_of_new_account(client, database, "speech")


def test_the_words_of_a_recording_become_its_searchable_transcript(speech_api: Api) -> None:
    card_id = file_card(speech_api, FOX.read_bytes(), "fox.ogg", "audio/ogg")
    card = processed(speech_api, card_id)
    assert ("transcript", "completed", None) in stages(card)
    assert card["aiTranscriptSource"] == "speech"
    assert "quick brown fox" in card["aiTranscript"].lower()
    found = speech_api.get("/v1/cards", params={"q": "lazy"}).json()["items"]
    assert [c["id"] for c in found] == [card_id]


def test_a_caption_file_comes_before_speech(speech_api: Api) -> None:
    card_id = file_card(speech_api, FOX.read_bytes(), "fox.ogg", "audio/ogg")
    processed(speech_api, card_id)
    assert attach(speech_api, card_id, VTT.encode()).status_code == 200
    card = processed(speech_api, card_id)
    assert card["aiTranscriptSource"] == "captions" and card["aiTranscript"].startswith("Knead")
    speech_api.request("DELETE", f"/v1/cards/{card_id}/captions")
    card = processed(speech_api, card_id)
    assert card["aiTranscriptSource"] == "speech"  # heard again once the file is gone


def test_a_video_without_sound_is_skipped_with_a_reason(speech_api: Api, tmp_path: Path) -> None:
    data = media_files.video(tmp_path / "mute.mp4", sound=False).read_bytes()
    card = processed(speech_api, file_card(speech_api, data, "mute.mp4", "video/mp4"))
    assert ("transcript", "skipped", "NO_SPEECH") in stages(card)
    assert card["aiTranscript"] is None
