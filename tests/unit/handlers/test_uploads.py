"""Uploads and file cards through the HTTP API: createUpload, the PUT to its URL, createCard
with fileKey and fileEtag, the signed file URL, and the file's end with its card. On the local
disk store (served by the app) and on S3 (a real SeaweedFS)."""

from __future__ import annotations

import dataclasses
import io
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from sqlalchemy import update
from starlette.testclient import TestClient

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.domain.auth import accounts, keys
from cardvault.domain.db import Database
from cardvault.domain.files import uploads
from cardvault.domain.models import Card, Upload
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers.files import delete_doomed_objects, forget_old_uploads
from cardvault.workers.trash import purge_trash
from tests.conftest import Api


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

    def test_uploads_a_day_old_go_with_their_objects(
        self, files_api: Api, files_store: BlobStore, database: Database
    ) -> None:
        taken_key, etag = uploaded(files_api, png(), "a.png", "image/png")
        files_api.post("/v1/cards", json={"fileKey": taken_key, "fileEtag": etag})
        uploaded(files_api, png(), "b.png", "image/png")  # never taken
        with database.transaction() as session:
            session.execute(
                update(Upload)
                .where(Upload.account_id == files_api.account_id)
                .values(created_at=Upload.created_at - uploads.KEEP_MS - 1)
            )
        forget_old_uploads.fn()  # what the sweeper sends every ten minutes
        delete_doomed_objects.fn()
        kept = list(files_store.keys(f"accounts/{files_api.account_id}/"))
        # The card keeps its own copy (and its renditions); both upload objects are gone.
        assert not [k for k in kept if "/uploads/" in k]
        assert len([k for k in kept if "/files/" in k]) == 1


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


class TestRenditions:
    def test_an_image_gets_a_compact_and_a_placeholder_rendition_turned_and_stripped(
        self, files_api: Api
    ) -> None:
        card = processed(files_api, image_card(files_api, _jpeg_turned(600, 400)))
        status = card["processingStatus"]
        assert status["state"] == "completed"
        assert [(s["name"], s["state"], s["attempts"], s["errorCode"]) for s in status["stages"]] == [
            ("renditions", "completed", 1, None)
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
        assert len([k for k in files_store.keys(account) if "/uploads/" not in k]) == 3
        files_api.post(f"/v1/cards/{card_id}/trash")
        files_api.request("DELETE", f"/v1/cards/{card_id}")
        _wait_for(lambda: [k for k in files_store.keys(account) if "/uploads/" not in k] == [])


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
