"""Caption files attached to audio and video cards (createCardCaptionsUpload, replaceCardCaptions,
deleteCardCaptions), on each database and blob store: the cues become the transcript when the
file has no subtitle track, the file is shown and served, replaced and removed files are
deleted, and every refusal answers the error body and changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cardvault.adapters.blobs import BlobStore
from harness import media_files
from tests.conftest import Api
from tests.unit.handlers.test_uploads import _get, _wait_for, processed, put
from tests.unit.workers.stages.test_media import file_card, stages

VTT = (
    "WEBVTT - a talk\n\nNOTE written by hand\n\n"
    "intro\n00:00.500 --> 00:01.500 align:start\n<v Ana>Knead the <b>dough</b></v> for ten minutes.\n\n"
    "00:02.000 --> 00:03.000\nLet it rest &amp; rise.\n"
)
SRT = (
    "1\r\n00:00:00,500 --> 00:00:01,500\r\nPreheat the oven.\r\n\r\n"
    "2\r\n00:00:02,000 --> 00:00:03,000\r\nBake it.\r\n"
)


def caption_ticket(
    api: Api, card_id: str, data: bytes, name: str = "talk.vtt", mime: str = "text/vtt"
) -> Any:
    return api.post(
        f"/v1/cards/{card_id}/captions/upload",
        json={"fileName": name, "fileSize": len(data), "mimeType": mime},
    )


def attach(api: Api, card_id: str, data: bytes, name: str = "talk.vtt", mime: str = "text/vtt") -> Any:
    """Upload a caption file for the card and attach it; the PUT's answer."""
    issued = caption_ticket(api, card_id, data, name, mime)
    assert issued.status_code == 200, issued.text
    assert put(api, issued.json(), data).status_code == 200
    return api.put(f"/v1/cards/{card_id}/captions", json={"fileKey": issued.json()["fileKey"]})


def audio_card(api: Api, tmp_path: Path) -> str:
    card_id = file_card(api, media_files.audio(tmp_path / "tone.mp3").read_bytes(), "tone.mp3", "audio/mpeg")
    card = processed(api, card_id)
    assert ("transcript", "skipped", "NO_TRANSCRIBER") in stages(card)
    return card_id


def caption_objects(store: BlobStore, api: Api) -> list[str]:
    return sorted(k for k in store.keys(f"accounts/{api.account_id}/") if "/captions/" in k)


class TestAttaching:
    def test_the_cues_become_the_searchable_transcript_and_the_file_is_shown(
        self, files_api: Api, files_store: BlobStore, tmp_path: Path
    ) -> None:
        card_id = audio_card(files_api, tmp_path)
        answered = attach(files_api, card_id, VTT.encode())
        assert answered.status_code == 200, answered.text
        shown = answered.json()["captionsFile"]
        assert {k: v for k, v in shown.items() if k != "url"} == {
            "fileName": "talk.vtt",
            "format": "vtt",
            "size": len(VTT.encode()),
            "cueCount": 2,
        }
        assert ("transcript", "pending", None) in stages(answered.json())
        card = processed(files_api, card_id)
        assert card["aiTranscript"] == "Knead the dough for ten minutes.\nLet it rest & rise."
        assert card["aiTranscriptSource"] == "captions"
        assert ("transcript", "completed", None) in stages(card)
        found = files_api.get("/v1/cards", params={"q": "knead"}).json()["items"]
        assert [c["id"] for c in found] == [card_id]
        served = _get(files_api, card["captionsFile"]["url"])
        assert served.status_code == 200 and served.content == VTT.encode()
        assert served.headers["Content-Type"].startswith("text/vtt")
        assert served.headers["Content-Disposition"].startswith("attachment")
        assert len(caption_objects(files_store, files_api)) == 1  # the upload's own object is gone

    def test_a_subrip_file_replaces_the_first_whose_file_is_deleted(
        self, files_api: Api, files_store: BlobStore, tmp_path: Path
    ) -> None:
        card_id = audio_card(files_api, tmp_path)
        assert attach(files_api, card_id, VTT.encode()).status_code == 200
        processed(files_api, card_id)
        first = caption_objects(files_store, files_api)
        srt = b"\xef\xbb\xbf" + SRT.encode()  # a byte order mark and CRLF lines
        answered = attach(files_api, card_id, srt, "talk.srt", "application/x-subrip")
        assert answered.status_code == 200, answered.text
        assert answered.json()["aiTranscript"] is None  # cleared until the stage runs again
        card = processed(files_api, card_id)
        assert (card["aiTranscript"], card["captionsFile"]["format"]) == (
            "Preheat the oven.\nBake it.",
            "srt",
        )
        _wait_for(lambda: len(caption_objects(files_store, files_api)) == 1)
        assert caption_objects(files_store, files_api) != first

    def test_a_subtitle_track_inside_the_file_comes_first(self, files_api: Api, tmp_path: Path) -> None:
        plain = media_files.video(tmp_path / "clip.mkv", sound=False)
        data = media_files.with_subtitles(tmp_path / "subbed.mkv", plain).read_bytes()
        card_id = file_card(files_api, data, "subbed.mkv", "video/x-matroska")
        processed(files_api, card_id)
        assert attach(files_api, card_id, VTT.encode()).status_code == 200
        card = processed(files_api, card_id)
        assert card["aiTranscriptSource"] == "subtitles" and card["aiTranscript"].startswith("Sourdough")
        assert card["captionsFile"]["cueCount"] == 2

    def test_removing_it_clears_the_transcript_and_deletes_the_file(
        self, files_api: Api, files_store: BlobStore, tmp_path: Path
    ) -> None:
        card_id = audio_card(files_api, tmp_path)
        attach(files_api, card_id, VTT.encode())
        assert processed(files_api, card_id)["aiTranscriptSource"] == "captions"
        removed = files_api.request("DELETE", f"/v1/cards/{card_id}/captions")
        assert removed.status_code == 200, removed.text
        assert (removed.json()["captionsFile"], removed.json()["aiTranscript"]) == (None, None)
        card = processed(files_api, card_id)
        assert ("transcript", "skipped", "NO_TRANSCRIBER") in stages(card)
        assert files_api.get("/v1/cards", params={"q": "knead"}).json()["items"] == []
        _wait_for(lambda: caption_objects(files_store, files_api) == [])
        again = files_api.request("DELETE", f"/v1/cards/{card_id}/captions")  # nothing to remove
        assert again.status_code == 200 and again.json()["updatedAt"] == removed.json()["updatedAt"]

    def test_a_refresh_keeps_the_file_and_makes_the_transcript_from_it_again(
        self, files_api: Api, tmp_path: Path
    ) -> None:
        card_id = audio_card(files_api, tmp_path)
        attach(files_api, card_id, VTT.encode())
        processed(files_api, card_id)
        assert files_api.post(f"/v1/cards/{card_id}/refresh").status_code == 202
        card = processed(files_api, card_id)
        assert card["aiTranscriptSource"] == "captions" and card["captionsFile"] is not None

    def test_the_same_upload_again_answers_the_card_as_it_is(self, files_api: Api, tmp_path: Path) -> None:
        card_id = audio_card(files_api, tmp_path)
        issued = caption_ticket(files_api, card_id, VTT.encode()).json()
        put(files_api, issued, VTT.encode())
        first = files_api.put(f"/v1/cards/{card_id}/captions", json={"fileKey": issued["fileKey"]})
        processed(files_api, card_id)
        again = files_api.put(f"/v1/cards/{card_id}/captions", json={"fileKey": issued["fileKey"]})
        assert again.status_code == 200 and again.json()["updatedAt"] == first.json()["updatedAt"]
        assert ("transcript", "completed", None) in stages(again.json())  # not run again

    def test_deleting_the_card_deletes_its_caption_file(
        self, files_api: Api, files_store: BlobStore, tmp_path: Path
    ) -> None:
        card_id = audio_card(files_api, tmp_path)
        attach(files_api, card_id, VTT.encode())
        processed(files_api, card_id)
        files_api.post(f"/v1/cards/{card_id}/trash")
        files_api.request("DELETE", f"/v1/cards/{card_id}")
        _wait_for(lambda: caption_objects(files_store, files_api) == [])


class TestRefusals:
    """Each refusal answers the error body, and the card stays as it was."""

    @pytest.fixture
    def card_id(self, files_api: Api, tmp_path: Path) -> str:
        return audio_card(files_api, tmp_path)

    def unchanged(self, api: Api, card_id: str) -> None:
        card = api.get(f"/v1/cards/{card_id}/extended").json()
        assert (card["captionsFile"], card["aiTranscript"]) == (None, None)
        assert ("transcript", "skipped", "NO_TRANSCRIBER") in stages(card)

    @pytest.mark.parametrize(
        ("data", "mime", "status", "code", "reason"),
        [
            (b"\x89PNG\r\n\x1a\n" + bytes(64), "text/vtt", 400, "UNSUPPORTED_TYPE", None),
            (b"just some words\n", "text/plain", 400, "UNSUPPORTED_TYPE", None),
            (b"WEBVTTX\n\n00:01.000 --> 00:02.000\nhi\n", "text/vtt", 400, "UNSUPPORTED_TYPE", None),
            (b"WEBVTT\n\nNOTE only a note\n", "text/vtt", 400, "INVALID_INPUT", "CAPTIONS_EMPTY"),
            (  # not UTF-8 after the start judged by type
                f"1\n00:00:01,000 --> 00:00:02,000\n{'fine ' * 1000}\n\n".encode()
                + b"2\n00:00:03,000 --> 00:00:04,000\n\xff\xfe\n",
                "application/x-subrip",
                400,
                "INVALID_INPUT",
                "CAPTIONS_UNREADABLE",
            ),
            (b"1\n00:00:01,000 --> 00:00:02,000\n\xff\xfe\n", "text/srt", 400, "UNSUPPORTED_TYPE", None),
        ],
    )
    def test_a_file_that_is_not_readable_captions(
        self, files_api: Api, card_id: str, data: bytes, mime: str, status: int, code: str, reason: str | None
    ) -> None:
        answered = attach(files_api, card_id, data, "x.vtt", mime)
        assert answered.status_code == status, answered.text
        body = answered.json()
        assert body["code"] == code
        if reason:
            assert body["details"] == {"reason": reason}
        self.unchanged(files_api, card_id)

    def test_another_type_of_upload_or_a_file_too_large_is_refused_at_once(
        self, files_api: Api, card_id: str
    ) -> None:
        refused = caption_ticket(files_api, card_id, b"x" * 10, "x.png", "image/png")
        assert (refused.status_code, refused.json()["code"]) == (400, "UNSUPPORTED_TYPE")
        big = files_api.post(
            f"/v1/cards/{card_id}/captions/upload",
            json={"fileName": "x.vtt", "fileSize": 5_000_001, "mimeType": "text/vtt"},
        )
        assert (big.status_code, big.json()["code"]) == (413, "FILE_TOO_LARGE")
        ok = caption_ticket(files_api, card_id, b"x" * 10)
        assert ok.json()["maxFileSize"] == 5_000_000

    def test_only_audio_and_video_cards_take_captions(self, files_api: Api) -> None:
        text = files_api.post("/v1/cards", json={"content": "a note"}).json()["cardId"]
        for answered in (
            caption_ticket(files_api, text, VTT.encode()),
            files_api.put(f"/v1/cards/{text}/captions", json={"fileKey": "upl_k7q2m4x8c3n5v9b1z6h0w2j4ra"}),
            files_api.request("DELETE", f"/v1/cards/{text}/captions"),
        ):
            assert (answered.status_code, answered.json()["code"]) == (400, "TYPE_MISMATCH")

    def test_uploads_of_another_card_or_account_and_used_ones(
        self, files_api: Api, new_api: Any, card_id: str, tmp_path: Path
    ) -> None:
        other_card = audio_card(files_api, tmp_path)
        issued = caption_ticket(files_api, other_card, VTT.encode()).json()
        put(files_api, issued, VTT.encode())
        wrong = files_api.put(f"/v1/cards/{card_id}/captions", json={"fileKey": issued["fileKey"]})
        assert (wrong.status_code, wrong.json()["code"]) == (404, "UPLOAD_NOT_FOUND")
        self.unchanged(files_api, card_id)
        stranger = new_api()
        for answered in (
            stranger.put(f"/v1/cards/{other_card}/captions", json={"fileKey": issued["fileKey"]}),
            stranger.request("DELETE", f"/v1/cards/{other_card}/captions"),
            caption_ticket(stranger, other_card, VTT.encode()),
        ):
            assert (answered.status_code, answered.json()["code"]) == (404, "NOT_FOUND")
        assert files_api.put(
            f"/v1/cards/{other_card}/captions", json={"fileKey": issued["fileKey"]}
        ).is_success
        files_api.request("DELETE", f"/v1/cards/{other_card}/captions")
        used = files_api.put(f"/v1/cards/{other_card}/captions", json={"fileKey": issued["fileKey"]})
        assert (used.status_code, used.json()["code"]) == (409, "UPLOAD_USED")

    def test_an_upload_with_no_file_yet_and_a_card_in_trash(self, files_api: Api, card_id: str) -> None:
        issued = caption_ticket(files_api, card_id, VTT.encode()).json()
        early = files_api.put(f"/v1/cards/{card_id}/captions", json={"fileKey": issued["fileKey"]})
        assert (early.status_code, early.json()["code"]) == (409, "UPLOAD_INCOMPLETE")
        put(files_api, issued, VTT.encode())
        files_api.post(f"/v1/cards/{card_id}/trash")
        for answered in (
            files_api.put(f"/v1/cards/{card_id}/captions", json={"fileKey": issued["fileKey"]}),
            files_api.request("DELETE", f"/v1/cards/{card_id}/captions"),
            caption_ticket(files_api, card_id, VTT.encode()),
        ):
            assert (answered.status_code, answered.json()["code"]) == (409, "CARD_IN_TRASH")
