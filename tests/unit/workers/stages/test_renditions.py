"""The ``renditions`` stage of an image card, through the HTTP API: its pictures, and what a
hostile image does."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from cardvault.adapters.blobs import BlobStore
from tests.conftest import Api
from tests.unit.handlers.test_uploads import (
    _animated_gif,
    _get,
    _jpeg_turned,
    _png_header_only,
    _wait_for,
    image_card,
    png,
    processed,
)


class TestRenditions:
    def test_an_image_gets_a_compact_and_a_placeholder_rendition_turned_and_stripped(
        self, files_api: Api
    ) -> None:
        card = processed(files_api, image_card(files_api, _jpeg_turned(600, 400)))
        status = card["processingStatus"]
        assert status["state"] == "completed"
        assert [(s["name"], s["state"], s["attempts"], s["errorCode"]) for s in status["stages"]] == [
            ("renditions", "completed", 1, None),
            ("ocr", "skipped", 1, "OCR_OFF"),  # (the OCR tests turn it on: test_ocr)
            ("ai", "skipped", 1, "AI_OFF"),
        ]
        assert (card["fileWidth"], card["fileHeight"]) == (400, 600)  # as displayed
        preview = card["filePreview"]
        assert (preview["kind"], preview["animated"]) == ("image", False)
        assert all(value is None for name, value in preview.items() if name not in ("kind", "animated"))
        assert card["thumbnailUrl"] == card["compactUrl"]
        (main,) = card["colors"]  # one colour, near the picture's (10, 120, 200) after JPEG
        assert all(abs(int(main["hex"][i : i + 2], 16) - v) <= 8 for i, v in ((1, 10), (3, 120), (5, 200)))
        assert main["name"] in ("cornflowerblue", "steelblue", "dodgerblue")
        for url, side in ((card["compactUrl"], 256), (card["placeholderUrl"], 48)):
            got = _get(files_api, url)
            assert got.status_code == 200 and got.headers["Content-Type"] == "image/webp"
            with Image.open(io.BytesIO(got.content)) as rendition:
                assert rendition.format == "WEBP"
                assert max(rendition.size) == side and rendition.size[0] < rendition.size[1]  # turned
                assert not rendition.getexif() and "exif" not in rendition.info  # nothing but pixels
        listed = files_api.get("/v1/cards", params={"include": "processing"}).json()["items"][0]
        assert listed["processingStatus"] == status and listed["compactUrl"]

    def test_an_animation_is_shown_by_its_first_frame(self, files_api: Api) -> None:
        card = processed(files_api, image_card(files_api, _animated_gif(), "loop.gif"))
        assert card["filePreview"]["animated"] is True
        assert (card["fileWidth"], card["fileHeight"]) == (40, 30)

    @pytest.mark.parametrize(
        ("data", "code"),
        [
            (_png_header_only(20_000, 20_000), "IMAGE_TOO_LARGE"),
            (_png_header_only(10_001, 1), "IMAGE_TOO_LARGE"),
            (png(300, 200)[:200], "IMAGE_UNREADABLE"),
        ],
        ids=["bomb-20000x20000", "10001-px-side", "truncated"],
    )
    def test_a_hostile_image_fails_its_stage_with_a_code_and_the_next_one_works(
        self, files_api: Api, data: bytes, code: str
    ) -> None:
        card = processed(files_api, image_card(files_api, data, "bad.png"))
        assert card["processingStatus"]["state"] == "failed"
        assert card["processingStatus"]["stages"][0]["errorCode"] == code
        assert card["compactUrl"] is None and card["fileWidth"] is None
        assert _get(files_api, card["fileUrl"]).status_code == 200  # the original is kept
        after = processed(files_api, image_card(files_api, png(30, 20), "good.png"))
        assert after["processingStatus"]["state"] == "completed"

    def test_deleting_the_card_deletes_its_renditions(self, files_api: Api, files_store: BlobStore) -> None:
        card_id = image_card(files_api, png(300, 200), "a.png")
        processed(files_api, card_id)
        account = f"accounts/{files_api.account_id}/"
        # The file, and its 1200, 256 and 48 px renditions.
        assert len([k for k in files_store.keys(account) if "/uploads/" not in k]) == 4
        files_api.post(f"/v1/cards/{card_id}/trash")
        files_api.request("DELETE", f"/v1/cards/{card_id}")
        _wait_for(lambda: [k for k in files_store.keys(account) if "/uploads/" not in k] == [])
