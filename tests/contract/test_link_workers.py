"""The pipeline in both shapes of the service: on the embedded default (actors on threads
inside `cardvault serve`) and in production's (PostgreSQL, Redis, a separate `cardvault worker`
process), a saved link's page is read from a local web server and its image stored, and a
recording's words are heard (the transcript stage has a queue of its own)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from harness.media_files import FOX
from harness.servers import PageServer, page_server, redis_server, running_server, server_env
from tests.conftest import fresh_postgres_database
from tests.speech_extra import require_speech

PAGE = b"""<!doctype html><html><head><title>Tide tables</title>
<meta property="og:title" content="Reading tide tables"><meta property="og:image" content="/cover.jpg">
<script type="application/ld+json">{"@type": "Recipe", "name": "Tide soup", "recipeYield": "4"}</script>
</head><body><p>High water twice a day.</p></body></html>"""


@pytest.fixture(params=["embedded", "production"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, PageServer]]:
    with page_server() as pages:
        image = io.BytesIO()
        Image.new("RGB", (300, 200), (30, 120, 60)).save(image, "JPEG")
        pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, PAGE)
        pages.routes["/cover.jpg"] = (200, {"Content-Type": "image/jpeg"}, image.getvalue())
        fetching = {
            "CARDVAULT_FETCH_LINKS": "true",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(pages.port),
            "CARDVAULT_SPEECH": "true",
        }
        if request.param == "embedded":
            with running_server({**server_env(tmp_path), **fetching}, tmp_path) as (base, key):
                yield base, key, pages
            return
        url = fresh_postgres_database("cardvault_links", "PostgreSQL link pipeline")
        with redis_server(tmp_path) as (redis_url, _):
            env = {**server_env(tmp_path, url), **fetching, "CARDVAULT_REDIS_URL": redis_url}
            with running_server(env, tmp_path) as (base, key):
                yield base, key, pages


def settled(base: str, headers: dict[str, str], card_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        card: dict[str, Any] = httpx.get(f"{base}/cards/{card_id}/extended", headers=headers).json()
        if card["processingStatus"]["state"] not in ("pending", "running"):
            return card
        assert time.monotonic() < deadline, card["processingStatus"]
        time.sleep(0.1)


def test_a_saved_link_is_read_by_the_workers(served: tuple[str, str, PageServer]) -> None:
    base, key, pages = served
    headers = {"Authorization": f"Bearer {key}"}
    created = httpx.post(f"{base}/cards", json={"content": pages.url("/tides")}, headers=headers)
    assert created.status_code == 200, created.text
    card = settled(base, headers, created.json()["cardId"])
    card_id = card["id"]
    assert card["processingStatus"]["state"] == "completed", card["processingStatus"]
    assert (card["metadataStatus"], card["metadataTitle"]) == ("completed", "Reading tide tables")
    assert card["linkFacts"] == [{"label": "Servings", "value": "4"}]
    image = httpx.get(card["linkPreviewImageUrl"])
    assert image.status_code == 200 and image.headers["content-type"] == "image/webp"
    done = httpx.post(f"{base}/cards/{card_id}/done", headers=headers).json()
    assert (done["linkCategory"], done["doneAs"]) == ("recipe", "cooked")
    assert pages.hits == {"/tides": 1, "/cover.jpg": 1}


def test_a_recordings_words_are_heard_by_the_workers(served: tuple[str, str, PageServer]) -> None:
    require_speech()
    base, key, _ = served
    headers = {"Authorization": f"Bearer {key}"}
    data = FOX.read_bytes()
    upload = httpx.post(
        f"{base}/uploads",
        json={"fileName": "fox.ogg", "fileSize": len(data), "mimeType": "audio/ogg"},
        headers=headers,
    ).json()
    stored = httpx.put(upload["uploadUrl"], content=data, headers=upload["headers"])
    assert stored.status_code == 200, stored.text
    created = httpx.post(
        f"{base}/cards",
        json={"fileKey": upload["fileKey"], "fileEtag": stored.headers["ETag"]},
        headers=headers,
    )
    assert created.status_code == 200, created.text
    card = settled(base, headers, created.json()["cardId"])
    assert card["aiTranscriptSource"] == "speech", card["processingStatus"]
    assert "quick brown fox" in card["aiTranscript"].lower()
