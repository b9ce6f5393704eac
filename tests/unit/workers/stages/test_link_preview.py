"""The ``linkPreview`` stage run by its actor, one message at a time: it waits for the page, and
a replaced or broken image is told apart from the page's."""

from __future__ import annotations

from sqlalchemy import text

from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage
from cardvault.workers.pipeline import ACTORS
from harness.servers import PageServer
from tests.unit.workers.stages.conftest import ARTICLE, card, link, png, stages


def test_the_preview_waits_for_the_page(bound: Database, account_id: str, pages: PageServer) -> None:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pk = link(bound, account_id, pages.url("/tides"))
    with bound.transaction() as session:  # as a migration leaves it: the sweeper's oldest
        session.execute(text("UPDATE card_stages SET updated_at = 0 WHERE card_pk = :pk"), {"pk": pk})
    ACTORS["linkPreview"](pk)  # early (the sweeper re-sent it): nothing happens
    assert stages(bound, pk)["linkPreview"] == ("pending", 0, None)
    with bound.transaction(write=False) as session:  # but it goes to the back of the sweeper's line
        waiting = session.get(CardStage, (pk, "linkPreview"))
        first = session.get(CardStage, (pk, "linkMetadata"))
        assert waiting is not None and first is not None and waiting.updated_at > first.updated_at == 0


def test_a_replaced_image_skips_the_preview(bound: Database, account_id: str, pages: PageServer) -> None:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pk = link(bound, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)
    with bound.transaction() as session:
        session.get(Card, pk).thumbnail_overridden = True  # type: ignore[union-attr]
    ACTORS["linkPreview"](pk)
    assert stages(bound, pk)["linkPreview"] == ("skipped", 1, "IMAGE_REPLACED")
    assert "/cover.png" not in pages.hits


def test_a_broken_image_fails_the_preview_and_keeps_the_page(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pages.routes["/cover.png"] = (200, {"Content-Type": "image/png"}, png()[:100])
    pk = link(bound, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)
    ACTORS["linkPreview"](pk)
    assert stages(bound, pk) == {
        "linkMetadata": ("completed", 1, None),
        "linkPreview": ("failed", 1, "IMAGE_UNREADABLE"),
        "capture": ("pending", 0, None),
        "ocr": ("pending", 0, None),
        "ai": ("pending", 0, None),
    }
    assert card(bound, pk).metadata_title == "Reading tide tables"


def test_an_image_replaced_while_the_preview_ran_stays(
    bound: Database, account_id: str, pages: PageServer
) -> None:
    pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, ARTICLE)
    pk = link(bound, account_id, pages.url("/tides"))
    ACTORS["linkMetadata"](pk)

    def replaced_meanwhile() -> tuple[int, dict[str, str], bytes]:
        with bound.transaction() as session:
            card = session.get(Card, pk)
            assert card is not None
            card.thumbnail_overridden, card.thumbnail_object = True, "accounts/x/thumbnails/mine.webp"
        return 200, {"Content-Type": "image/png"}, png()

    pages.routes["/cover.png"] = replaced_meanwhile  # while the stage fetches the image
    ACTORS["linkPreview"](pk)
    assert stages(bound, pk)["linkPreview"] == ("skipped", 1, "IMAGE_REPLACED")
    assert card(bound, pk).thumbnail_object == "accounts/x/thumbnails/mine.webp"
    with bound.transaction(write=False) as session:  # what the attempt stored goes
        doomed = {key for (key,) in session.execute(text("SELECT key FROM doomed_objects"))}
    assert len([key for key in doomed if key.endswith(("-1200.webp", "-256.webp", "-48.webp"))]) == 3
