"""Uploads and file cards through the HTTP API: createUpload, the PUT to its URL, createCard
with fileKey and fileEtag, the signed file URL, and the file's end with its card. On the local
disk store (served by the app) and on S3 (a real SeaweedFS). The helpers here serve the other
file tests too (the local store's URLs, renditions, replaced images, the clean-up jobs)."""

from __future__ import annotations

import io
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image
from sqlalchemy import update

from cardvault.adapters.blobs import BlobStore
from cardvault.domain.db import Database
from cardvault.domain.files import uploads
from cardvault.domain.models import Card, Upload
from cardvault.workers.trash import purge_trash
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def png(width: int = 8, height: int = 6) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def _get(api: Api, url: str) -> Any:
    """GET a file URL: the app's own (local disk) or the S3 server's."""
    if url.startswith("https://app.cardvault.test/"):
        return api.client.get(url)
    import httpx

    return httpx.get(url)


def ticket(api: Api, data: bytes, name: str, mime: str) -> dict[str, Any]:
    response = api.post("/v1/uploads", json={"fileName": name, "fileSize": len(data), "mimeType": mime})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def put(api: Api, upload: dict[str, Any], data: bytes, **headers: str) -> Any:
    sent = {**upload["headers"], **headers}
    if upload["uploadUrl"].startswith("https://app.cardvault.test/"):
        return api.client.put(upload["uploadUrl"], content=data, headers=sent)
    import httpx

    return httpx.put(upload["uploadUrl"], content=data, headers=sent)


def uploaded(api: Api, data: bytes, name: str, mime: str) -> tuple[str, str]:
    """Upload a file; return its fileKey and ETag."""
    upload = ticket(api, data, name, mime)
    stored = put(api, upload, data)
    assert stored.status_code == 200, stored.text
    return upload["fileKey"], stored.headers["ETag"]


def card_count(api: Api) -> int:
    return int(api.get("/v1/cards", params={"include": "total"}).json()["total"])


class TestFileCards:
    def test_an_uploaded_png_makes_an_image_card_whose_url_serves_it(self, files_api: Api) -> None:
        data = png()
        key, etag = uploaded(files_api, data, "../holiday/beach.PNG", "image/png")
        created = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag, "tags": ["sea"]})
        assert created.status_code == 200, created.text
        card = created.json()["card"]
        assert card["type"] == "image"
        assert (card["fileName"], card["fileSize"], card["mimeType"]) == ("beach.PNG", len(data), "image/png")
        assert (card["fileKind"], card["fileExtension"], card["fileLanguage"]) == ("image", "png", None)
        got = _get(files_api, card["fileUrl"])
        assert got.status_code == 200 and got.content == data
        assert got.headers["Content-Type"] == "image/png"
        assert got.headers["Content-Disposition"].startswith("inline;")
        assert got.headers["Cache-Control"] == "private, max-age=31536000, immutable"
        read = files_api.get(f"/v1/cards/{card['id']}").json()
        assert read["fileKind"] == "image" and _get(files_api, read["fileUrl"]).content == data

    def test_a_markdown_upload_becomes_a_text_card_with_its_text(self, files_api: Api) -> None:
        text = "# Notes\n\n- café\n".encode()
        key, etag = uploaded(files_api, text, "notes.md", "text/markdown")
        card = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).json()["card"]
        assert (card["type"], card["content"], card["fileKind"]) == (
            "text",
            "# Notes\n\n- café\n",
            "markdown",
        )

    def test_a_page_of_html_is_a_source_document_served_as_an_attachment(self, files_api: Api) -> None:
        page = b"<!doctype html><script>alert(document.cookie)</script>"
        key, etag = uploaded(files_api, page, "page.html", "text/html")
        card = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).json()["card"]
        assert (card["type"], card["fileKind"], card["fileLanguage"], card["mimeType"]) == (
            "document",
            "source",
            "html",
            "text/plain",
        )
        got = _get(files_api, card["fileUrl"])
        assert got.headers["Content-Disposition"].startswith("attachment;")
        assert got.headers["Content-Type"].startswith("text/plain")

    def test_a_card_type_the_bytes_contradict_is_type_mismatch_and_keeps_the_upload(
        self, files_api: Api
    ) -> None:
        key, etag = uploaded(files_api, png(), "clip.mp4", "video/mp4")
        refused = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag, "cardType": "video"})
        assert refused.status_code == 400
        assert refused.json()["code"] == "TYPE_MISMATCH" and refused.json()["details"] == {
            "detected": "image"
        }
        assert card_count(files_api) == 0
        again = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        assert again.status_code == 200 and again.json()["card"]["type"] == "image"

    @pytest.mark.parametrize("card_type", ["image", "video", "audio", "document"])
    def test_a_file_card_without_a_file_is_refused(self, files_api: Api, card_type: str) -> None:
        refused = files_api.post("/v1/cards", json={"cardType": card_type, "fileName": "a.png"})
        assert refused.status_code == 400 and refused.json()["code"] == "FILE_REQUIRED"
        assert card_count(files_api) == 0


class TestCreateChecks:
    """The checks of createCard, in their order."""

    def test_another_accounts_upload_answers_like_a_missing_one(self, new_api: Callable[[], Api]) -> None:
        owner, other = new_api(), new_api()
        key, etag = uploaded(owner, png(), "a.png", "image/png")
        theirs = other.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        missing = other.post("/v1/cards", json={"fileKey": "upl_" + "a" * 26, "fileEtag": etag})
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["code"] == missing.json()["code"] == "UPLOAD_NOT_FOUND"

    def test_an_upload_is_taken_once(self, files_api: Api) -> None:
        key, etag = uploaded(files_api, png(), "a.png", "image/png")
        assert files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).status_code == 200
        again = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        assert (again.status_code, again.json()["code"]) == (409, "UPLOAD_USED")
        assert card_count(files_api) == 1

    def test_an_upload_without_its_file_is_incomplete(self, files_api: Api) -> None:
        upload = ticket(files_api, png(), "a.png", "image/png")
        refused = files_api.post("/v1/cards", json={"fileKey": upload["fileKey"], "fileEtag": '"abc"'})
        assert (refused.status_code, refused.json()["code"]) == (409, "UPLOAD_INCOMPLETE")

    def test_another_etag_is_upload_changed(self, files_api: Api) -> None:
        key, etag = uploaded(files_api, png(), "a.png", "image/png")
        refused = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": '"0123"'})
        assert (refused.status_code, refused.json()["code"]) == (409, "UPLOAD_CHANGED")
        assert refused.json()["details"] == {"etag": etag}

    def test_a_file_key_needs_its_etag(self, files_api: Api) -> None:
        key, _ = uploaded(files_api, png(), "a.png", "image/png")
        refused = files_api.post("/v1/cards", json={"fileKey": key})
        assert (refused.status_code, refused.json()["code"]) == (400, "INVALID_INPUT")

    def test_an_upload_older_than_a_day_is_not_found(self, files_api: Api, database: Database) -> None:
        key, etag = uploaded(files_api, png(), "a.png", "image/png")
        with database.transaction() as session:
            session.execute(
                update(Upload).where(Upload.id == key).values(created_at=Upload.created_at - uploads.KEEP_MS)
            )
        refused = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        assert (refused.status_code, refused.json()["code"]) == (404, "UPLOAD_NOT_FOUND")

    @pytest.mark.parametrize(
        ("data", "name", "detected"),
        [
            (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>', "logo.png", "svg"),
            (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64, "photo.png", "heic"),
            (b"MZ\x90\x00\x03" + b"\x00" * 200, "setup.png", None),
        ],
        ids=["svg-renamed-png", "heic-renamed-png", "executable"],
    )
    def test_bytes_of_no_accepted_type_are_unsupported_whatever_the_name(
        self, files_api: Api, data: bytes, name: str, detected: str | None
    ) -> None:
        key, etag = uploaded(files_api, data, name, "image/png")
        refused = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
        assert (refused.status_code, refused.json()["code"]) == (400, "UNSUPPORTED_TYPE")
        assert refused.json()["details"] == ({"detected": detected} if detected else None)
        assert card_count(files_api) == 0

    def test_a_polyglot_is_judged_by_its_first_bytes(self, files_api: Api) -> None:
        # A PNG that also carries a script: it is a PNG, and is served as one (never as HTML).
        data = png() + b"<script>alert(1)</script>"
        key, etag = uploaded(files_api, data, "x.html", "text/html")
        card = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).json()["card"]
        assert (card["type"], card["mimeType"]) == ("image", "image/png")
        got = _get(files_api, card["fileUrl"])
        assert got.headers["Content-Type"] == "image/png"
        assert got.headers.get("X-Content-Type-Options", "nosniff") == "nosniff"


class TestCreateUpload:
    def test_answers_a_ticket_for_a_put(self, files_api: Api) -> None:
        upload = ticket(files_api, png(), "a.png", "image/png")
        assert upload["fileKey"].startswith("upl_")
        assert upload["method"] == "PUT" and upload["headers"] == {"Content-Type": "image/png"}
        assert upload["maxFileSize"] == 19_999_999
        assert time.time() * 1000 < upload["expiresAt"] <= (time.time() + uploads.URL_SECONDS) * 1000

    @pytest.mark.parametrize(
        ("body", "status", "code"),
        [
            ({"fileName": "a.png", "fileSize": 20_000_000, "mimeType": "image/png"}, 413, "FILE_TOO_LARGE"),
            ({"fileName": "a.svg", "fileSize": 10, "mimeType": "image/svg+xml"}, 400, "UNSUPPORTED_TYPE"),
            ({"fileName": "a.heic", "fileSize": 10, "mimeType": "image/HEIC"}, 400, "UNSUPPORTED_TYPE"),
            ({"fileName": "a\x07.png", "fileSize": 10, "mimeType": "image/png"}, 400, "INVALID_INPUT"),
            ({"fileName": "a.png", "fileSize": 0, "mimeType": "image/png"}, 400, "INVALID_INPUT"),
            ({"fileName": "a.png", "fileSize": 10, "mimeType": "png"}, 400, "INVALID_INPUT"),
        ],
        ids=["too-large", "svg", "heic", "control-character", "empty", "bad-type"],
    )
    def test_refuses_what_cannot_be_taken(
        self, files_api: Api, body: dict[str, Any], status: int, code: str
    ) -> None:
        refused = files_api.post("/v1/uploads", json=body)
        assert (refused.status_code, refused.json()["code"]) == (status, code)


class TestS3UploadUrl:
    """What S3 itself enforces of its presigned PUT, and what a replayed PUT can change."""

    @pytest.fixture
    def storage(self, s3_env: dict[str, str]) -> dict[str, str]:
        return s3_env

    def test_a_put_replayed_after_the_card_took_the_file_changes_nothing(
        self, files_api: Api, files_store: BlobStore
    ) -> None:
        data = png()
        upload = ticket(files_api, data, "a.png", "image/png")
        stored = put(files_api, upload, data)
        card = files_api.post(
            "/v1/cards", json={"fileKey": upload["fileKey"], "fileEtag": stored.headers["ETag"]}
        ).json()["card"]
        other = png(9, 9)[: len(data)].ljust(len(data), b"\0")  # same size, other bytes
        assert put(files_api, upload, other).status_code == 200  # S3 takes it: the URL is valid
        assert _get(files_api, card["fileUrl"]).content == data  # the card has its own copy
        again = files_api.post(
            "/v1/cards", json={"fileKey": upload["fileKey"], "fileEtag": stored.headers["ETag"]}
        )
        assert again.json()["code"] == "UPLOAD_USED"

    def test_s3_refuses_another_size_or_type_and_an_expired_url(
        self, files_api: Api, files_store: BlobStore
    ) -> None:
        data = png()
        upload = ticket(files_api, data, "a.png", "image/png")
        assert put(files_api, upload, data + b"x").status_code == 403
        assert put(files_api, upload, data, **{"Content-Type": "image/gif"}).status_code == 403
        expired = files_store.upload_target(
            "accounts/x/uploads/y", size=4, content_type="text/plain", expires_in=1
        )
        time.sleep(2.1)
        import httpx

        assert httpx.put(expired.url, content=b"abcd", headers=expired.headers).status_code == 403


class TestS3OutOfReach:
    """An S3 server that cannot be reached (stopped: nothing listens on its port). Asking for an
    upload does not reach it (its URL is signed here); taking one does."""

    @pytest.fixture
    def storage(self, unreachable_s3_env: dict[str, str]) -> dict[str, str]:
        return unreachable_s3_env

    def test_create_card_with_a_file_answers_503_service_unavailable_with_retry_at(
        self, files_api: Api
    ) -> None:
        upload = ticket(files_api, png(), "a.png", "image/png")
        before = time.time() * 1000
        response = files_api.post("/v1/cards", json={"fileKey": upload["fileKey"], "fileEtag": '"0"'})
        body = assert_error(response, 503, "SERVICE_UNAVAILABLE")
        assert "file store" in body["error"] and body["retryAt"] > before
        assert int(response.headers["retry-after"]) >= 1
        assert card_count(files_api) == 0


def _wait_for(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


class TestFilesEndWithTheirCards:
    """No object outlives its card (the embedded worker deletes them after the commit)."""

    def test_deleting_a_card_forever_deletes_its_file(self, files_api: Api, files_store: BlobStore) -> None:
        key, etag = uploaded(files_api, png(), "a.png", "image/png")
        card = files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).json()["card"]
        prefix = f"accounts/{files_api.account_id}/files/"
        assert len(list(files_store.keys(prefix))) == 1
        files_api.post(f"/v1/cards/{card['id']}/trash")
        assert files_api.request("DELETE", f"/v1/cards/{card['id']}").status_code == 204
        _wait_for(lambda: not list(files_store.keys(prefix)))

    def test_emptying_trash_deletes_their_files_and_keeps_the_others(
        self, files_api: Api, files_store: BlobStore
    ) -> None:
        ids = []
        for name in ("a.png", "b.png", "c.png"):
            key, etag = uploaded(files_api, png(), name, "image/png")
            ids.append(files_api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag}).json()["cardId"])
        for card_id in ids[:2]:
            files_api.post(f"/v1/cards/{card_id}/trash")
        assert files_api.request("DELETE", "/v1/trash").json()["deletedCount"] == 2
        prefix = f"accounts/{files_api.account_id}/files/"
        _wait_for(lambda: len(list(files_store.keys(prefix))) == 1)
        kept = files_api.get(f"/v1/cards/{ids[2]}").json()
        assert _get(files_api, kept["fileUrl"]).status_code == 200

    def test_the_trash_purge_deletes_the_files_of_the_cards_it_purges(
        self, files_api: Api, files_store: BlobStore, database: Database
    ) -> None:
        card_id = image_card(files_api, png(300, 200), "a.png")
        processed(files_api, card_id)
        files_api.post(f"/v1/cards/{card_id}/trash")
        with database.transaction() as session:
            session.execute(update(Card).where(Card.id == card_id).values(deleted_at=1))
        purge_trash.fn()  # what the sweeper sends every ten minutes; it sends the deletion
        account = f"accounts/{files_api.account_id}/"
        _wait_for(lambda: [k for k in files_store.keys(account) if "/uploads/" not in k] == [])
        assert files_api.get(f"/v1/cards/{card_id}").status_code == 404


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares a size in its header and holds almost nothing (a bomb's shape)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    pixels = zlib.compress(b"\x00" * (width * 3 + 1) * 2)  # two rows; the rest is missing
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _jpeg_turned(width: int, height: int) -> bytes:
    """A JPEG whose EXIF says it is shown turned a quarter (orientation 6), with a GPS tag."""
    image = Image.new("RGB", (width, height), (10, 120, 200))
    exif = Image.Exif()
    exif[0x0112] = 6
    exif[0x8825] = {2: (48.0, 51.0, 24.0)}
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif.tobytes(), quality=90)
    return out.getvalue()


def _animated_gif() -> bytes:
    frames = [Image.new("RGB", (40, 30), color) for color in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    return out.getvalue()


def processed(api: Api, card_id: str) -> dict[str, Any]:
    """The extended card once its processing has settled."""
    deadline = time.monotonic() + 30
    while True:
        card = api.get(f"/v1/cards/{card_id}/extended").json()
        if card["processingStatus"]["state"] in ("completed", "failed"):
            return card  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, card["processingStatus"]
        time.sleep(0.05)


def image_card(api: Api, data: bytes, name: str = "photo.jpg") -> str:
    key, etag = uploaded(api, data, name, "image/jpeg")
    created = api.post("/v1/cards", json={"fileKey": key, "fileEtag": etag})
    assert created.status_code == 200, created.text
    return str(created.json()["cardId"])


def thumbnail_upload(api: Api, card_id: str, data: bytes, mime: str = "image/png") -> str:
    """Upload an image for a link card's new image; return its fileKey."""
    answer = api.post(
        f"/v1/cards/{card_id}/thumbnail/upload",
        json={"fileName": "cover.png", "fileSize": len(data), "mimeType": mime},
    )
    assert answer.status_code == 200, answer.text
    stored = put(api, answer.json(), data)
    assert stored.status_code == 200, stored.text
    return str(answer.json()["fileKey"])
