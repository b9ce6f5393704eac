"""Links through the HTTP API: the pipeline reads a saved link's page from a local web server
(the test-only loopback setting), the card shows it, `processingState` filters by it, mark-done
says how the link was done, and refresh reruns it within its limits."""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from starlette.testclient import TestClient

from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import PageServer, page_server
from tests.conftest import Api, api_of_new_account, app_env

HTML = {"Content-Type": "text/html; charset=utf-8"}


def page(title: str, *, kind: str = "Article", image: str | None = "/cover.png", extra: str = "") -> bytes:
    image_tag = f'<meta property="og:image" content="{image}">' if image else ""
    return f"""<!doctype html><html><head><title>{title} | Site</title>
<meta property="og:title" content="{title}">{image_tag}
<link rel="canonical" href="/canonical/{title.replace(" ", "-").lower()}">
<script type="application/ld+json">{{"@type": "{kind}", "name": "{title}"{extra}}}</script>
</head><body><p>Some words about {title}.</p></body></html>""".encode()


def png(color: tuple[int, int, int] = (20, 90, 160)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (800, 500), color).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        server.routes["/cover.png"] = (200, {"Content-Type": "image/png"}, png())
        yield server


@pytest.fixture
def link_app(tmp_path: Path, database: Database, pages: PageServer) -> Iterator[TestClient]:
    settings = Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_FETCH_LINKS": "true",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": str(pages.port),
        }
    )
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def new_api(link_app: TestClient, database: Database) -> Callable[[], Api]:
    return functools.partial(api_of_new_account, link_app, database, "links")


@pytest.fixture
def links_api(new_api: Callable[[], Api]) -> Api:
    return new_api()


def settled(api: Api, card_id: str) -> dict[str, Any]:
    """The extended card once every stage of its pipeline has settled (the sum is failed as
    soon as one stage fails, while others may still wait)."""
    deadline = time.monotonic() + 30
    while True:
        card = api.get(f"/v1/cards/{card_id}/extended").json()
        if all(s["state"] not in ("pending", "running") for s in card["processingStatus"]["stages"]):
            return card  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, card["processingStatus"]
        time.sleep(0.05)


def saved(api: Api, url: str) -> str:
    return str(api.create(content=url)["id"])


def stage_states(card: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(s["name"], s["state"], s["errorCode"]) for s in card["processingStatus"]["stages"]]


class TestThePipeline:
    def test_a_saved_link_shows_its_page_and_image(self, links_api: Api, pages: PageServer) -> None:
        pages.routes["/tides"] = (200, HTML, page("Tide tables", extra=', "author": {"name": "Ann Lee"}'))
        card_id = saved(links_api, pages.url("/tides?utm_source=x"))
        card = settled(links_api, card_id)
        assert card["metadataStatus"] == "completed"
        assert stage_states(card) == [
            ("linkMetadata", "completed", None),
            ("linkPreview", "completed", None),
            ("capture", "skipped", "CAPTURE_OFF"),  # (these tests capture nothing: tests/browser does)
            ("ocr", "skipped", "NO_PICTURE"),  # (no screenshot to read)
            ("ai", "skipped", "AI_OFF"),  # (these tests turn the AI off)
        ]
        assert (card["metadataTitle"], card["linkPreviewTitle"], card["linkAuthor"]) == (
            "Tide tables",
            "Tide tables",
            "Ann Lee",
        )
        assert card["linkSiteName"] == "localhost"
        assert card["linkCanonicalUrl"] == pages.url("/canonical/tide-tables")
        assert card["linkPreviewMedia"][0]["url"] == pages.url("/cover.png")
        image = links_api.client.get(card["linkPreviewImageUrl"])
        assert image.status_code == 200 and image.headers["Content-Type"] == "image/webp"
        with Image.open(io.BytesIO(image.content)) as stored:
            assert stored.size == (800, 500)  # under 1200 px: kept at its size
        assert card["compactUrl"] and card["placeholderUrl"] and card["thumbnailUrl"] == card["compactUrl"]
        found = links_api.get("/v1/cards", params={"q": "tide", "include": "processing"}).json()["items"]
        assert [c["id"] for c in found] == [card_id]
        assert found[0]["processingStatus"] == card["processingStatus"]

    def test_a_missing_page_fails_and_the_state_filter_finds_it(
        self, links_api: Api, pages: PageServer
    ) -> None:
        pages.routes["/ok"] = (200, HTML, page("Fine page", image=None))
        good = saved(links_api, pages.url("/ok"))
        bad = saved(links_api, pages.url("/gone"))
        text = links_api.create(content="just words")["id"]
        failed = settled(links_api, bad)
        assert failed["metadataStatus"] == "failed"
        assert stage_states(failed) == [
            ("linkMetadata", "failed", "SOURCE_NOT_FOUND"),
            ("linkPreview", "skipped", "NO_PAGE"),
            ("capture", "skipped", "NO_PAGE"),
            ("ocr", "skipped", "NO_PICTURE"),
            ("ai", "skipped", "AI_OFF"),
        ]
        assert failed["processingStatus"]["state"] == "failed"
        fine = settled(links_api, good)
        assert stage_states(fine)[1] == ("linkPreview", "skipped", "NO_IMAGE")
        assert fine["processingStatus"]["state"] == "completed"

        def listed(state: str) -> list[str]:
            answer = links_api.get("/v1/cards", params={"processingState": state})
            assert answer.status_code == 200, answer.text
            return [c["id"] for c in answer.json()["items"]]

        assert listed("failed") == [bad]
        assert listed("completed") == [good]
        assert listed("pending") == [] and listed("skipped") == [text]  # its one stage, ai
        assert links_api.get("/v1/cards", params={"processingState": "broken"}).status_code == 400

    def test_a_new_url_reads_the_new_page(self, links_api: Api, pages: PageServer) -> None:
        pages.routes["/one"] = (200, HTML, page("First page"))
        pages.routes["/two"] = (200, HTML, page("Second page", image=None))
        card_id = saved(links_api, pages.url("/one"))
        assert settled(links_api, card_id)["linkPreviewImageUrl"]
        edited = links_api.patch(f"/v1/cards/{card_id}", json={"url": pages.url("/two")})
        assert edited.status_code == 200 and edited.json()["metadataTitle"] is None  # the old page's gone
        card = settled(links_api, card_id)
        assert card["metadataTitle"] == "Second page"
        assert card["linkPreviewImageUrl"] is None and card["compactUrl"] is None  # the new page has none


class TestDone:
    @pytest.mark.parametrize(
        ("kind", "category", "verb"),
        [
            ("Recipe", "recipe", "cooked"),
            ("Product", "product", "bought"),
            ("Movie", "movie", "watched"),
            ("PodcastEpisode", "podcast", "listened"),
            ("VideoGame", "game", "played"),
            ("NewsArticle", "news", "read"),
            ("Event", "event", "done"),
        ],
    )
    def test_done_says_how_by_category(
        self, links_api: Api, pages: PageServer, kind: str, category: str, verb: str
    ) -> None:
        pages.routes["/thing"] = (200, HTML, page("The thing", kind=kind, image=None))
        card_id = saved(links_api, pages.url("/thing"))
        settled(links_api, card_id)
        done = links_api.post(f"/v1/cards/{card_id}/done")
        assert done.status_code == 200, done.text
        body = done.json()
        assert (body["linkCategory"], body["doneAs"]) == (category, verb)
        assert (body["sourceTitle"], body["sourceUrl"]) == ("The thing", pages.url("/canonical/the-thing"))
        assert body["isHidden"] is False and body["completedAt"]

    def test_a_link_whose_page_was_not_read_is_done_plainly(self, links_api: Api) -> None:
        card_id = saved(links_api, "http://localhost:1/nothing-here")  # a port the fetcher refuses
        assert settled(links_api, card_id)["metadataStatus"] == "failed"
        body = links_api.post(f"/v1/cards/{card_id}/done").json()
        assert (body["linkCategory"], body["doneAs"], body["sourceTitle"], body["sourceUrl"]) == (
            None,
            "done",
            None,
            None,
        )


def give_ai_fields(database: Database, account_id: str, card_id: str) -> None:
    with database.transaction() as session:
        editing.set_ai_tags(session, account_id=account_id, card_id=card_id, tags=["tides", "sea"])
        card = editing.get_card(session, account_id=account_id, card_id=card_id)
        card.ai_summary, card.ai_transcript = "About tides.", "high water, low water"


def color(api: Api, url: str) -> str:
    """Whether the image at ``url`` is the red replacement or the page's blue cover."""
    with Image.open(io.BytesIO(api.client.get(url).content)) as image:
        red, _, blue = image.convert("RGB").getpixel((5, 5))  # type: ignore[misc]
    return "red" if red > blue else "blue"


class TestRefresh:
    def test_refresh_clears_the_ai_fields_and_reads_the_page_again(
        self, links_api: Api, pages: PageServer, database: Database
    ) -> None:
        pages.routes["/tides"] = (200, HTML, page("Tide tables"))
        card_id = saved(links_api, pages.url("/tides"))
        settled(links_api, card_id)
        give_ai_fields(database, links_api.account_id, card_id)
        assert links_api.get("/v1/cards", params={"tag": "sea"}).json()["items"]
        pages.routes["/tides"] = (200, HTML, page("Tide tables, revised"))
        answer = links_api.post(f"/v1/cards/{card_id}/refresh")
        assert answer.status_code == 202, answer.text
        body = answer.json()
        assert set(body) == {"cardId", "requestedAt", "status"}
        assert (body["cardId"], body["status"]) == (card_id, "queued")
        assert abs(body["requestedAt"] - time.time() * 1000) < 60_000
        assert (
            "refresh" in answer.headers["RateLimit-Policy"] and "refresh-card" in answer.headers["RateLimit"]
        )
        card = settled(links_api, card_id)
        assert (card["aiSummary"], card["aiTags"], card["aiTranscript"]) == (None, [], None)
        assert links_api.get("/v1/cards", params={"tag": "sea"}).json()["items"] == []
        assert card["metadataTitle"] == "Tide tables, revised"
        # (ocr: skipped before an attempt, the capture having made no screenshot)
        assert [s["attempts"] for s in card["processingStatus"]["stages"]] == [1, 1, 1, 0, 1]
        assert pages.hits["/tides"] == 2

    def test_a_card_refreshes_once_a_minute_and_an_account_six_cards(
        self, links_api: Api, pages: PageServer
    ) -> None:
        ids = [links_api.create(content=f"note {n}")["id"] for n in range(7)]
        assert links_api.post(f"/v1/cards/{ids[0]}/refresh").status_code == 202
        again = links_api.post(f"/v1/cards/{ids[0]}/refresh")
        assert again.status_code == 429
        assert again.json()["code"] == "RATE_LIMITED" and again.json()["details"]["policy"] == "refresh-card"
        assert int(again.headers["Retry-After"]) >= 1 and again.json()["retryAt"]
        for card_id in ids[1:6]:
            assert links_api.post(f"/v1/cards/{card_id}/refresh").status_code == 202
        seventh = links_api.post(f"/v1/cards/{ids[6]}/refresh")
        assert seventh.status_code == 429 and seventh.json()["details"]["policy"] == "refresh"

    def test_refresh_of_a_card_in_trash_or_of_another_account(
        self, links_api: Api, new_api: Callable[[], Api]
    ) -> None:
        card_id = links_api.create(content="a note")["id"]
        links_api.post(f"/v1/cards/{card_id}/trash")
        in_trash = links_api.post(f"/v1/cards/{card_id}/refresh")
        assert in_trash.status_code == 409 and in_trash.json()["code"] == "CARD_IN_TRASH"
        mine = links_api.create(content="mine")["id"]
        other = new_api().post(f"/v1/cards/{mine}/refresh")
        missing = links_api.post("/v1/cards/crd_missing/refresh")
        assert other.status_code == missing.status_code == 404
        assert other.json()["code"] == missing.json()["code"] == "NOT_FOUND"

    def test_a_replaced_image_stays_through_refresh_until_reset(
        self, links_api: Api, pages: PageServer
    ) -> None:
        from tests.unit.handlers.test_uploads import thumbnail_upload

        pages.routes["/tides"] = (200, HTML, page("Tide tables"))
        card_id = saved(links_api, pages.url("/tides"))
        page_image = settled(links_api, card_id)["linkPreviewImageUrl"]
        key = thumbnail_upload(links_api, card_id, png((200, 10, 10)))
        replaced = links_api.request("PUT", f"/v1/cards/{card_id}/thumbnail", json={"fileKey": key}).json()
        assert replaced["linkPreviewImageUrl"] != page_image
        assert links_api.post(f"/v1/cards/{card_id}/refresh").status_code == 202
        card = settled(links_api, card_id)
        assert stage_states(card)[1] == ("linkPreview", "skipped", "IMAGE_REPLACED")
        assert card["thumbnailOverridden"] is True
        assert color(links_api, card["linkPreviewImageUrl"]) == "red"  # the replaced image
        reset = links_api.request("DELETE", f"/v1/cards/{card_id}/thumbnail")
        assert reset.status_code == 200, reset.text
        card = settled(links_api, card_id)
        assert card["thumbnailOverridden"] is False
        assert stage_states(card)[1] == ("linkPreview", "completed", None)
        assert color(links_api, card["linkPreviewImageUrl"]) == "blue"  # the page's again
