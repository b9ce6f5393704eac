"""Audio, video and document cards through the pipeline's ``media`` and ``transcript`` stages,
on each database and blob store: what the extended card shows (duration, size, poster, scrub
strip, waveform, transcript, previews and facts), and that hostile files fail their stage with a
code, make no network request and leave the decoder working."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cardvault.adapters.blobs import BlobStore
from harness import media_files
from harness.servers import PageServer, page_server
from tests.conftest import Api
from tests.unit.domain.test_links import settled
from tests.unit.handlers.test_uploads import _get, _wait_for, processed, uploaded


def file_card(api: Api, data: bytes, name: str, mime: str = "application/octet-stream") -> str:
    key, etag = uploaded(api, data, name, mime)
    created = api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
    assert created.status_code == 200, created.text
    return str(created.json()["cardId"])


def stages(card: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(s["name"], s["state"], s["errorCode"]) for s in card["processingStatus"]["stages"]]


def picture(api: Api, url: str) -> Image.Image:
    got = _get(api, url)
    assert got.status_code == 200 and got.headers["Content-Type"] == "image/webp"
    return Image.open(io.BytesIO(got.content))


class TestVideo:
    def test_a_video_gets_its_duration_size_poster_and_scrub_strip(
        self, files_api: Api, tmp_path: Path
    ) -> None:
        data = media_files.video(tmp_path / "clip.mp4").read_bytes()
        card = processed(files_api, file_card(files_api, data, "clip.mp4", "video/mp4"))
        assert stages(card) == [
            ("media", "completed", None),
            ("transcript", "skipped", "NO_TRANSCRIBER"),  # no subtitles, no speech recognition
            ("ai", "skipped", "AI_OFF"),
        ]
        assert (card["type"], card["fileDuration"], card["fileWidth"], card["fileHeight"]) == (
            "video",
            4.0,
            320,
            240,
        )
        assert card["filePreview"]["kind"] == "video" and card["audioWaveform"] is None
        assert picture(files_api, card["thumbnailUrl"]).size == (320, 240)  # the poster, not enlarged
        assert picture(files_api, card["compactUrl"]).size == (256, 192)
        assert max(picture(files_api, card["placeholderUrl"]).size) == 48
        scrub = card["videoScrub"]
        assert {k: scrub[k] for k in ("frames", "columns", "frameWidth", "frameHeight")} == {
            "frames": 4,  # one a second
            "columns": 4,
            "frameWidth": 160,
            "frameHeight": 120,
        }
        sheet = picture(files_api, scrub["url"]).convert("RGB")
        assert sheet.size == (640, 120)
        reds = [sheet.getpixel((160 * i + 120, 100))[0] for i in range(4)]
        assert reds == sorted(reds) and reds[-1] - reds[0] > 100  # later frames, redder

    def test_a_refresh_replaces_the_pictures_and_deleting_the_card_deletes_them(
        self, files_api: Api, files_store: BlobStore, tmp_path: Path
    ) -> None:
        data = media_files.video(tmp_path / "clip.mp4").read_bytes()
        card_id = file_card(files_api, data, "clip.mp4", "video/mp4")
        processed(files_api, card_id)
        account = f"accounts/{files_api.account_id}/"

        def stored() -> list[str]:
            return sorted(k for k in files_store.keys(account) if "/renditions/" in k)

        first = stored()
        assert [k.rsplit("-", 1)[1] for k in first] == ["1200.webp", "256.webp", "48.webp", "scrub.webp"]
        assert files_api.post(f"/v1/cards/{card_id}/refresh").status_code == 202
        processed(files_api, card_id)
        _wait_for(lambda: len(stored()) == 4 and not set(stored()) & set(first))  # the old ones go
        files_api.post(f"/v1/cards/{card_id}/trash")
        files_api.request("DELETE", f"/v1/cards/{card_id}")
        _wait_for(lambda: stored() == [])

    def test_subtitles_inside_the_file_become_its_searchable_transcript(
        self, files_api: Api, tmp_path: Path
    ) -> None:
        plain = media_files.video(tmp_path / "clip.mkv", sound=False)
        data = media_files.with_subtitles(tmp_path / "subbed.mkv", plain).read_bytes()
        card_id = file_card(files_api, data, "subbed.mkv", "video/x-matroska")
        card = processed(files_api, card_id)
        assert ("transcript", "completed", None) in stages(card)
        assert card["aiTranscript"] == "Sourdough rises with wild yeast.\nFeed the starter every day."
        assert card["aiTranscriptSource"] == "subtitles"
        found = files_api.get("/v1/cards", params={"q": "starter"}).json()["items"]
        assert [c["id"] for c in found] == [card_id]

    def test_a_frame_too_large_fails_the_stage(self, files_api: Api, tmp_path: Path) -> None:
        data = media_files.video(tmp_path / "huge.mp4", seconds=1, size=(8200, 8200), sound=False, rate=1)
        card = settled(files_api, file_card(files_api, data.read_bytes(), "huge.mp4", "video/mp4"))
        assert stages(card)[:2] == [
            ("media", "failed", "MEDIA_TOO_LARGE"),
            ("transcript", "skipped", "NO_MEDIA"),
        ]
        assert card["thumbnailUrl"] is None and card["videoScrub"] is None


class TestAudio:
    def test_an_audio_file_gets_its_duration_and_waveform(self, files_api: Api, tmp_path: Path) -> None:
        data = media_files.audio(tmp_path / "tone.mp3").read_bytes()
        card = processed(files_api, file_card(files_api, data, "tone.mp3", "audio/mpeg"))
        assert stages(card)[0] == ("media", "completed", None)
        assert card["type"] == "audio" and 2.9 <= card["fileDuration"] <= 3.2
        detail, grid = card["audioWaveform"]["detail"], card["audioWaveform"]["grid"]
        assert 290 <= len(detail) <= 320 and len(grid) == 64  # one value each 10 ms under 10 s
        assert all(0 <= v <= 1 for v in detail) and max(detail) == 1.0
        assert grid[2] < grid[30] < grid[60]  # the tone grows
        assert card["thumbnailUrl"] is None and card["videoScrub"] is None


class TestDocuments:
    def test_a_pdf_gets_its_page_count_and_its_first_page_as_picture(self, files_api: Api) -> None:
        data = media_files.pdf(["Sourdough notes", "Second page"])
        card = processed(files_api, file_card(files_api, data, "notes.pdf", "application/pdf"))
        assert stages(card) == [
            ("media", "completed", None),
            ("ocr", "skipped", "OCR_OFF"),  # (the OCR tests turn it on: test_ocr)
            ("ai", "skipped", "AI_OFF"),
        ]
        assert card["filePreview"]["kind"] == "pdf" and card["filePreview"]["pageCount"] == 2
        page = picture(files_api, card["thumbnailUrl"])
        assert max(page.size) == 1200 and page.size[0] < page.size[1]  # a letter page, upright
        assert max(picture(files_api, card["compactUrl"]).size) == 256

    @pytest.mark.parametrize(
        ("name", "data", "facts"),
        [
            (
                "report.docx",
                media_files.docx(["Bread", "Butter"], pages=3, words=200),
                {"pageCount": 3, "wordCount": 200},
            ),
            ("deck.pptx", media_files.pptx(["One", "Two", "Three"]), {"slideCount": 3}),
            ("sheet.xlsx", media_files.xlsx(2, ["a", "b"]), {"sheetCount": 2}),
            (
                "bundle.zip",
                media_files.archive({"a.txt": b"aa", "sub/b.txt": b"bbb"}, folders=("sub",)),
                {"entryCount": 3, "fileCount": 2, "directoryCount": 1, "uncompressedBytes": 5},
            ),
            (
                "bundle.tar",
                media_files.tar({"a.txt": b"aa"}, folders=("sub",)),
                {"entryCount": 2, "fileCount": 1, "directoryCount": 1, "uncompressedBytes": 2},
            ),
        ],
        ids=["docx", "pptx", "xlsx", "zip", "tar"],
    )
    def test_office_files_and_archives_show_their_facts(
        self, files_api: Api, name: str, data: bytes, facts: dict[str, int]
    ) -> None:
        card = processed(files_api, file_card(files_api, data, name))
        preview = card["filePreview"]
        assert stages(card)[0] == ("media", "completed", None)
        assert {k: preview[k] for k in facts} == facts
        assert all(preview[k] is None for k in preview if k not in facts and k != "kind")

    def test_a_zip_bomb_is_counted_from_its_index_and_never_unpacked(self, files_api: Api) -> None:
        card = processed(files_api, file_card(files_api, media_files.zip_bomb(), "bomb.zip"))
        assert stages(card)[0] == ("media", "completed", None)
        assert card["filePreview"]["uncompressedBytes"] == 64 * 1024 * 1024  # declared, not unpacked
        bomb = media_files.office_bomb()  # a part that unpacks to 64 MiB is read to its limit only
        card = processed(files_api, file_card(files_api, bomb, "bomb.docx"))
        assert stages(card)[0] == ("media", "completed", None)

    def test_a_zip_declaring_more_entries_than_are_counted_shows_its_count_alone(
        self, files_api: Api
    ) -> None:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as written:
            for n in range(100_001):
                written.writestr(f"f{n}", b"")
        card = processed(files_api, file_card(files_api, out.getvalue(), "many.zip"))
        preview = card["filePreview"]
        assert (preview["entryCount"], preview["fileCount"], preview["uncompressedBytes"]) == (
            100_001,
            None,
            None,
        )

    def test_a_source_file_shows_its_start_and_its_lines(self, files_api: Api) -> None:
        code = "".join(f"print({n})\n" for n in range(500)).encode()
        card = processed(files_api, file_card(files_api, code, "count.py", "text/x-python"))
        preview = card["filePreview"]
        assert (card["fileLanguage"], preview["kind"], preview["lineCount"]) == ("python", "source", 500)
        assert preview["excerpt"] == code.decode()[:2000]


class TestHostileFiles:
    @pytest.fixture
    def listener(self) -> Iterator[PageServer]:
        with page_server() as server:
            yield server

    def test_a_playlist_dressed_as_mp4_fails_without_a_request_and_the_next_file_works(
        self, files_api: Api, listener: PageServer, tmp_path: Path
    ) -> None:
        data = media_files.playlist_as_mp4(listener.url("/segment.ts"))
        card = processed(files_api, file_card(files_api, data, "trick.mp4", "video/mp4"))
        assert stages(card)[0] == ("media", "failed", "MEDIA_UNREADABLE")
        assert listener.hits == {}  # FFmpeg made no request
        broken = media_files.video(tmp_path / "clip.mp4").read_bytes()[:3000]
        card = processed(files_api, file_card(files_api, broken, "broken.mp4", "video/mp4"))
        assert stages(card)[0] == ("media", "failed", "MEDIA_UNREADABLE")
        fine = media_files.audio(tmp_path / "tone.mp3").read_bytes()
        assert stages(processed(files_api, file_card(files_api, fine, "tone.mp3")))[0] == (
            "media",
            "completed",
            None,
        )

    def test_a_broken_pdf_fails_its_stage(self, files_api: Api) -> None:
        data = media_files.pdf(["x"])[:200]
        card = processed(files_api, file_card(files_api, data, "broken.pdf", "application/pdf"))
        assert stages(card)[0] == ("media", "failed", "DOCUMENT_UNREADABLE")
