"""The local-disk store's URLs the app serves (cardvault.handlers.http.files): the upload PUT and
the file GET."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardvault.adapters.blobs.local import LocalDiskStore
from harness.faults.disk import Filler
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_uploads import png, put, ticket, uploaded


class TestLocalUploadUrl:
    """The local disk store's upload URL, served by the app (S3 checks its own)."""

    @pytest.fixture
    def storage(self) -> dict[str, str]:
        return {}

    def test_refuses_a_body_of_another_size_or_type(self, files_api: Api) -> None:
        data = png()
        upload = ticket(files_api, data, "a.png", "image/png")
        longer = put(files_api, upload, data + b"x")
        shorter = put(files_api, upload, data[:-1])
        other_type = put(files_api, upload, data, **{"Content-Type": "text/html"})
        assert [r.status_code for r in (longer, shorter, other_type)] == [413, 400, 403]
        assert all(r.headers["Content-Type"] == "application/json" for r in (longer, shorter, other_type))
        assert put(files_api, upload, data).status_code == 200
        replayed = put(files_api, upload, data)
        assert (replayed.status_code, replayed.json()["code"]) == (409, "UPLOAD_COMPLETE")

    def test_refuses_a_tampered_or_expired_url(self, files_api: Api, tmp_path: Path) -> None:
        upload = ticket(files_api, png(), "a.png", "image/png")
        url = upload["uploadUrl"]
        tampered = url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB")
        assert put(files_api, {**upload, "uploadUrl": tampered}, png()).status_code == 403
        store = LocalDiskStore(
            tmp_path / "blobs", secret_key="s" * 48, public_url="https://app.cardvault.test"
        )
        expired = store.upload_target(
            "accounts/x/uploads/y", size=10, content_type="image/png", expires_in=-1
        )
        answer = files_api.client.put(expired.url, content=b"0123456789", headers=expired.headers)
        assert (answer.status_code, answer.json()["code"]) == (403, "URL_EXPIRED")

    def test_other_methods_answer_405_with_allow(self, files_api: Api) -> None:
        upload = ticket(files_api, png(), "a.png", "image/png")
        answer = files_api.client.post(upload["uploadUrl"], content=b"x")
        assert answer.status_code == 405 and answer.headers["Allow"] == "PUT"

    def test_a_file_url_serves_ranges(self, files_api: Api) -> None:
        data = bytes(range(256)) * 4
        key, etag = uploaded(files_api, data, "data.txt", "application/octet-stream")
        refused = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        assert refused.json()["code"] == "UNSUPPORTED_TYPE"  # binary of no accepted type
        text = b"line\n" * 300
        key, etag = uploaded(files_api, text, "log.txt", "text/plain")
        card = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).json()["card"]
        part = files_api.client.get(card["fileUrl"], headers={"Range": "bytes=5-9"})
        assert part.status_code == 206 and part.content == text[5:10]

    def test_a_body_that_finds_the_disk_full_answers_503_and_the_url_takes_it_later(
        self, blobs_disk: Path, files_api: Api
    ) -> None:
        data = png(64, 64)
        upload = ticket(files_api, data, "a.png", "image/png")
        with Filler(blobs_disk):
            full = put(files_api, upload, data)
        body = assert_error(full, 503, "SERVICE_UNAVAILABLE")
        assert body["retryAt"] is not None and int(full.headers["Retry-After"]) >= 1
        assert list((blobs_disk / "tmp").iterdir()) == []  # no partial file holds the space
        stored = put(files_api, upload, data)
        assert stored.status_code == 200 and stored.headers["ETag"]
