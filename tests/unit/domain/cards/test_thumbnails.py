"""Replacing a link card's image with an uploaded one, and resetting it
(cardvault.domain.cards.thumbnails), through the HTTP API."""

from __future__ import annotations

import dataclasses
import io
import time
from collections.abc import Callable

import pytest
from PIL import Image
from starlette.testclient import TestClient

from cardvault.adapters.blobs import BlobStore
from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import Api
from tests.unit.handlers.test_uploads import (
    _get,
    _jpeg_turned,
    _png_header_only,
    _wait_for,
    png,
    thumbnail_upload,
)


class TestReplacedImage:
    def test_a_link_card_shows_its_new_image_until_reset(
        self, files_api: Api, files_store: BlobStore
    ) -> None:
        link = files_api.create(content="https://example.com/a")["id"]
        key = thumbnail_upload(files_api, link, _jpeg_turned(1600, 900), "image/jpeg")
        replaced = files_api.request("PUT", f"/v1/cards/{link}/thumbnail", json={"fileKey": key})
        assert replaced.status_code == 200, replaced.text
        card = replaced.json()
        assert card["thumbnailOverridden"] is True
        with Image.open(io.BytesIO(_get(files_api, card["linkPreviewImageUrl"]).content)) as large:
            assert large.format == "WEBP" and large.size == (675, 1200)  # turned, fits 1200
        assert _get(files_api, card["compactUrl"]).status_code == 200
        again = files_api.request("PUT", f"/v1/cards/{link}/thumbnail", json={"fileKey": key})
        assert again.status_code == 200 and again.json()["thumbnailOverridden"] is True  # a repeat
        # A second image replaces the first, whose files go.
        second = thumbnail_upload(files_api, link, png(300, 300))
        assert (
            files_api.request("PUT", f"/v1/cards/{link}/thumbnail", json={"fileKey": second}).status_code
            == 200
        )
        renditions = f"accounts/{files_api.account_id}/renditions/"
        _wait_for(lambda: len(list(files_store.keys(renditions))) == 3)
        reset = files_api.request("DELETE", f"/v1/cards/{link}/thumbnail")
        assert reset.status_code == 200
        body = reset.json()
        assert body["thumbnailOverridden"] is False
        assert body["linkPreviewImageUrl"] is body["compactUrl"] is body["placeholderUrl"] is None
        _wait_for(lambda: not list(files_store.keys(renditions)))

    def test_refusals_in_the_interfaces_order(self, files_api: Api, new_api: Callable[[], Api]) -> None:
        link = files_api.create(content="https://example.com/a")["id"]
        text = files_api.create(content="just words")["id"]

        def replace(card_id: str, file_key: str) -> tuple[int, str]:
            answer = files_api.request("PUT", f"/v1/cards/{card_id}/thumbnail", json={"fileKey": file_key})
            return answer.status_code, answer.json()["code"]

        good = thumbnail_upload(files_api, link, png())
        assert replace(text, good) == (400, "TYPE_MISMATCH")
        other_link = files_api.create(content="https://example.com/b")["id"]
        assert replace(other_link, good) == (404, "UPLOAD_NOT_FOUND")  # issued for another card
        stranger = new_api()
        assert (
            stranger.request("PUT", f"/v1/cards/{link}/thumbnail", json={"fileKey": good}).status_code == 404
        )
        svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
        assert replace(link, thumbnail_upload(files_api, link, svg)) == (400, "UNSUPPORTED_TYPE")
        heic = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + bytes(64)
        assert replace(link, thumbnail_upload(files_api, link, heic)) == (400, "UNSUPPORTED_TYPE")
        wide = _png_header_only(10_001, 20)
        assert replace(link, thumbnail_upload(files_api, link, wide)) == (400, "INVALID_INPUT")
        truncated = png(400, 300)[:300]
        assert replace(link, thumbnail_upload(files_api, link, truncated)) == (400, "INVALID_INPUT")
        not_put = files_api.post(
            f"/v1/cards/{link}/thumbnail/upload",
            json={"fileName": "a.png", "fileSize": 10, "mimeType": "image/png"},
        ).json()["fileKey"]
        assert replace(link, not_put) == (409, "UPLOAD_INCOMPLETE")
        too_large = files_api.post(
            f"/v1/cards/{link}/thumbnail/upload",
            json={"fileName": "a.png", "fileSize": 20_000_000, "mimeType": "image/png"},
        )
        assert (too_large.status_code, too_large.json()["code"]) == (413, "FILE_TOO_LARGE")
        svg_type = files_api.post(
            f"/v1/cards/{link}/thumbnail/upload",
            json={"fileName": "a.svg", "fileSize": 10, "mimeType": "image/svg+xml"},
        )
        assert (svg_type.status_code, svg_type.json()["details"]) == (400, {"detected": "svg"})
        files_api.post(f"/v1/cards/{link}/trash")
        assert replace(link, good) == (409, "CARD_IN_TRASH")
        card = files_api.get(f"/v1/cards/{link}/extended").json()
        assert card["thumbnailOverridden"] is False and card["linkPreviewImageUrl"] is None


@pytest.mark.parametrize("storage", [{}], ids=["local"])
def test_image_changes_are_limited_per_account(
    files_settings: Settings, database: Database, storage: dict[str, str]
) -> None:
    settings = dataclasses.replace(
        files_settings, rate_limits={**files_settings.rate_limits, "image-changes": "2/minute"}
    )
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        with database.transaction() as session:
            account = accounts.create_account(session, name=f"limits-{time.time_ns()}")
            api = Api(client, keys.issue_api_key(session, account_id=account.id), account.id)
        link = api.create(content="https://example.com/a")["id"]
        statuses = []
        for _ in range(3):
            key = thumbnail_upload(api, link, png())
            statuses.append(api.request("PUT", f"/v1/cards/{link}/thumbnail", json={"fileKey": key}))
        assert [s.status_code for s in statuses] == [200, 200, 429]
        assert (
            statuses[2].json()["details"] == {"policy": "image-changes"}
            and "Retry-After" in statuses[2].headers
        )
