"""The ``capture`` stage through the HTTP API, with the embedded worker and Debian's Chromium: a
link card gets its screenshot (and renditions where its page names no image), its archive and
its reader view, whose text the AI stage reads; the stage shows in ``processingStatus``, runs
again on refresh, and its objects go with the card."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image
from starlette.testclient import TestClient

from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.domain.db import Database
from cardvault.domain.files.quotas import NO_QUOTAS
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import PageServer, page_server, redis_server, running_server, server_env
from tests.conftest import Api, api_of_new_account, app_env, fresh_postgres_database
from tests.contract.test_link_workers import settled
from tests.unit.handlers.test_exports import download, started, verified, wait_for_export
from tests.unit.handlers.test_uploads import _wait_for, processed

# The page's text is drawn by its script after the load: the fetched page has one sentence (too
# few for a summary), the captured one a dozen paragraphs.
_DRAWN = "".join(
    f"<p>Spring tide {day} rises higher than the neap tide before it, as the sun and the moon pull "
    f"the sea together on day {day} of the month.</p>"
    for day in range(1, 13)
)
ARTICLE = (
    "<!doctype html><html><head><title>Reading tide tables</title></head><body><article>"
    "<h1>Reading tide tables</h1><p>Tables list high and low water.</p></article><script>"
    f"document.querySelector('article').insertAdjacentHTML('beforeend', '{_DRAWN}')"
    "</script></body></html>"
).encode()


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as served:
        served.routes["/tides"] = (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE)
        yield served


@pytest.fixture
def capture_settings(chromium_path: str, tmp_path: Path, database: Database, pages: PageServer) -> Settings:
    return Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_FETCH_LINKS": "true",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(pages.port),
            "CARDVAULT_CAPTURE": "true",
            "CARDVAULT_AI": "true",
        }
    )


@pytest.fixture
def store(capture_settings: Settings) -> BlobStore:
    return store_from_settings(capture_settings)


@pytest.fixture
def api(capture_settings: Settings, database: Database) -> Iterator[Api]:
    with TestClient(create_app(capture_settings, database), raise_server_exceptions=False) as client:
        yield api_of_new_account(client, database, "capture")


def _link(api: Api, url: str) -> str:
    created = api.post("/v1/cards", json={"content": url})
    assert created.status_code == 200, created.text
    return created.json()["card"]["id"]  # type: ignore[no-any-return]


def _picture(api: Api, url: str) -> Image.Image:
    got = api.client.get(url)
    assert got.status_code == 200 and got.headers["Content-Type"] == "image/webp"
    return Image.open(io.BytesIO(got.content))


def _objects(store: BlobStore, api: Api) -> list[str]:
    return [key for key in store.keys(f"accounts/{api.account_id}/") if "/uploads/" not in key]


def test_a_link_is_captured_and_its_reader_view_is_what_the_ai_reads(api: Api, pages: PageServer) -> None:
    card = processed(api, _link(api, pages.url("/tides")))
    stages = [(s["name"], s["state"], s["errorCode"]) for s in card["processingStatus"]["stages"]]
    assert stages == [
        ("linkMetadata", "completed", None),
        ("linkPreview", "skipped", "NO_IMAGE"),
        ("capture", "completed", None),
        ("ocr", "skipped", "OCR_OFF"),  # (the page gave text: HAS_TEXT, were OCR on)
        ("ai", "completed", None),
    ]
    with _picture(api, card["screenshotUrl"]) as shot:
        assert shot.size == (1280, 800)
    assert card["detailUrl"] == card["screenshotUrl"]  # the page names no image of its own
    with _picture(api, card["compactUrl"]) as compact, _picture(api, card["placeholderUrl"]) as tiny:
        assert max(compact.size) == 256 and max(tiny.size) == 48
    archive, reader = card["linkArchive"], card["linkReader"]
    assert archive["contentType"] == "multipart/related" and archive["capturedAt"] == card["linkCapturedAt"]
    got = api.client.get(archive["url"])
    assert got.status_code == 200 and got.headers["Content-Disposition"].startswith("attachment")
    assert len(got.content) == archive["size"] and b"Saved by Blink" in got.content[:2000]
    assert b"Spring tide 12" in got.content  # the page after its script ran
    got = api.client.get(reader["url"])
    assert got.status_code == 200 and got.headers["Content-Disposition"].startswith("attachment")
    text = got.content.decode()
    assert text.startswith("# Reading tide tables") and "Spring tide 12 rises" in text
    assert reader["wordCount"] > 100 and reader["size"] == len(got.content)
    assert "Spring tide" in card["aiSummary"]  # the summary of the text the script drew


def test_refresh_captures_again_and_the_old_objects_go(api: Api, pages: PageServer, store: BlobStore) -> None:
    card_id = _link(api, pages.url("/tides"))
    first = processed(api, card_id)
    before = set(_objects(store, api))
    assert len([key for key in before if "/captures/" in key]) == 2  # the archive, the reader
    assert api.post(f"/v1/cards/{card_id}/refresh").status_code == 202
    second = processed(api, card_id)
    assert second["linkCapturedAt"] > first["linkCapturedAt"]
    _wait_for(lambda: not before & set(_objects(store, api)))  # the first capture's objects go
    assert len(_objects(store, api)) == 5  # the new screenshot, its two renditions, archive, reader


def test_a_card_in_trash_is_not_captured_again_and_deleting_it_deletes_the_capture(
    api: Api, pages: PageServer, store: BlobStore
) -> None:
    card_id = _link(api, pages.url("/tides"))
    processed(api, card_id)
    assert len(_objects(store, api)) == 5
    assert api.post(f"/v1/cards/{card_id}/trash").status_code == 200
    refused = api.post(f"/v1/cards/{card_id}/refresh")
    assert refused.status_code == 409 and refused.json()["code"] == "CARD_IN_TRASH"
    assert api.request("DELETE", f"/v1/cards/{card_id}").status_code == 204
    _wait_for(lambda: _objects(store, api) == [])


def test_with_capture_off_the_stage_is_skipped_and_the_ai_reads_the_fetched_page(
    chromium_path: str, tmp_path: Path, database: Database, pages: PageServer
) -> None:
    env = {
        **app_env(tmp_path, database),
        "CARDVAULT_FETCH_LINKS": "true",
        "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
        "CARDVAULT_FETCH_PORTS": str(pages.port),
        "CARDVAULT_AI": "true",
    }
    with TestClient(create_app(Settings.from_env(env), database), raise_server_exceptions=False) as client:
        api = api_of_new_account(client, database, "capture-off")
        card = processed(api, _link(api, pages.url("/tides")))
    assert [(s["name"], s["state"], s["errorCode"]) for s in card["processingStatus"]["stages"]][2:] == [
        ("capture", "skipped", "CAPTURE_OFF"),
        ("ocr", "skipped", "NO_PICTURE"),  # no screenshot
        ("ai", "completed", None),
    ]
    assert (
        card["screenshotUrl"] is card["linkArchive"] is card["linkReader"] is card["linkCapturedAt"] is None
    )
    assert card["aiSummary"] is None  # the fetched page's one sentence is its own summary


def test_an_export_carries_the_capture_and_an_import_restores_it_without_capturing_again(
    api: Api, pages: PageServer, store: BlobStore, database: Database, tmp_path: Path
) -> None:
    from cardvault.handlers.cli import restore

    card = processed(api, _link(api, pages.url("/tides")))
    started(api)
    job = wait_for_export(api)
    zipped = download(api, job)
    verified(zipped)
    (record,) = json.loads(zipped.read("cards.json"))["cards"]
    assert record["linkCapture"]["capturedAt"] == card["linkCapturedAt"]
    held = {role: zipped.read(record[role]["path"]) for role in ("screenshot", "archive", "reader")}
    assert held["archive"] == api.client.get(card["linkArchive"]["url"]).content
    assert held["reader"] == api.client.get(card["linkReader"]["url"]).content
    assert held["screenshot"] == api.client.get(card["screenshotUrl"]).content
    path = tmp_path / "export.zip"
    path.write_bytes(api.client.get(job["downloadUrl"]).content)

    other = api_of_new_account(api.client, database, "restored")
    out = io.StringIO()
    assert (
        restore.run(database, store, account_id=other.account_id, path=path, quotas=NO_QUOTAS, out=out) == 0
    )
    assert out.getvalue().splitlines()[-1] == "Imported 1 cards, 0 folders and 3 files."
    (listed,) = other.get("/v1/cards").json()["items"]
    restored = processed(other, listed["id"])
    capture = next(s for s in restored["processingStatus"]["stages"] if s["name"] == "capture")
    assert (capture["state"], capture["attempts"]) == ("completed", 0)  # restored, not captured again
    assert restored["linkCapturedAt"] == card["linkCapturedAt"]
    for field, role in (("linkArchive", "archive"), ("linkReader", "reader")):
        assert other.client.get(restored[field]["url"]).content == held[role]
        assert restored[field]["size"] == card[field]["size"]
    assert restored["linkReader"]["wordCount"] == card["linkReader"]["wordCount"]
    assert other.client.get(restored["screenshotUrl"]).content == held["screenshot"]
    with _picture(other, restored["compactUrl"]) as compact:
        assert max(compact.size) == 256


def test_in_production_shape_the_worker_process_captures_on_its_own_queue(
    chromium_path: str, tmp_path: Path, pages: PageServer
) -> None:
    # cardvault serve and a separate cardvault worker on Redis and PostgreSQL: the worker
    # consumes the captures queue and runs its own browser.
    url = fresh_postgres_database("cardvault_capture", "PostgreSQL capture pipeline")
    with redis_server(tmp_path) as (redis_url, _):
        env = {
            **server_env(tmp_path, url),
            "CARDVAULT_REDIS_URL": redis_url,
            "CARDVAULT_FETCH_LINKS": "true",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(pages.port),
            "CARDVAULT_CAPTURE": "true",
        }
        with running_server(env, tmp_path) as (base, key):
            headers = {"Authorization": f"Bearer {key}"}
            created = httpx.post(f"{base}/cards", json={"content": pages.url("/tides")}, headers=headers)
            assert created.status_code == 200, created.text
            card = settled(base, headers, created.json()["cardId"])
            capture = next(s for s in card["processingStatus"]["stages"] if s["name"] == "capture")
            assert (capture["state"], capture["errorCode"]) == ("completed", None), card["processingStatus"]
            assert card["linkReader"]["wordCount"] > 100 and card["linkArchive"]["size"] > 0
            assert httpx.get(card["screenshotUrl"]).headers["content-type"] == "image/webp"
