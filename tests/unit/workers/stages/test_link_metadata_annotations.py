"""Imported highlights become annotations: each exporter's file (Pocket, Omnivore, Raindrop,
wallabag, Karakeep, in its own shape) taken by an import keeps its highlights as the link
card's annotations, unplaced while its page is unknown, and placed once the linkMetadata stage
has read a served page that holds them."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlalchemy import select

from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import Annotation, Card
from cardvault.domain.portability.imports.formats import Item, delimited, documents, zipped
from cardvault.workers.pipeline import ACTORS
from harness.servers import PageServer
from tests.unit.domain.portability.imports.formats.conftest import (
    FIXTURES,
    members_of,
    read,
    read_opened,
    zipped_bytes,
)
from tests.unit.domain.portability.imports.test_jobs import _job, _take

ASYNC_RUST = "https://example.com/articles/async-rust?ref=feed&utm_source=newsletter"
PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Notes</title></head><body>
<article><h1>Collected notes</h1>
<p>The way to figure out what to work on is by working. Curiosity is the best guide. Your curiosity
never lies, and it knows more than you do about what's worth paying attention to.</p>
<p>In traditional software, you write the rules.</p><p>In AI products, you shape the behavior.</p>
<p>Prototyping is cheap; evaluation is expensive. Executors poll futures until they are ready.
Nothing happens until a future is polled.</p>
</article></body></html>"""


def _pocket(url: str) -> list[Item]:
    members = members_of(FIXTURES / "pocket2025")
    old = b"https://paulgraham.com/greatwork.html"
    moved = {name: data.replace(old, url.encode()) for name, data in members.items()}
    return read_opened(zipped.pocket, zipped_bytes(moved))


def _omnivore(url: str) -> list[Item]:
    members = members_of(FIXTURES / "omnivore")
    old = b"https://every.to/source-code/why-building-in-ai-is-nothing-like-making-conventional-software"
    moved = {name: data.replace(old, url.encode()) for name, data in members.items()}
    return read_opened(zipped.omnivore, zipped_bytes(moved))


def _raindrop(url: str) -> list[Item]:
    data = (FIXTURES / "raindrop.csv").read_bytes().replace(ASYNC_RUST.encode(), url.encode())
    return read(delimited.raindrop, data)


def _wallabag(url: str) -> list[Item]:
    export = json.loads((FIXTURES / "wallabag.json").read_bytes())
    assert export[0]["url"] == ASYNC_RUST
    export[0]["url"] = url
    return read_opened(documents.wallabag, json.dumps(export).encode())


def _karakeep(url: str) -> list[Item]:
    export = json.loads((FIXTURES / "karakeep.json").read_bytes())
    bookmark = export["bookmarks"][0]
    bookmark["content"]["url"] = url
    bookmark["highlights"] = [  # as Karakeep's export writes a bookmark's highlights
        {"text": "Executors poll futures until they are ready.", "note": "Key idea", "color": "red"},
        {"text": "Nothing happens until a future is polled.", "note": None, "color": "yellow"},
    ]
    return read_opened(documents.karakeep, json.dumps(export).encode())


FORMATS: dict[str, tuple[Callable[[str], list[Item]], list[tuple[str, str | None]]]] = {
    "pocket": (
        _pocket,
        [
            ("The way to figure out what to work on is by working.", None),
            (
                "Curiosity is the best guide. Your curiosity never lies, and it knows more than you do "
                "about what's worth paying attention to.",
                None,
            ),
        ],
    ),
    "omnivore": (
        _omnivore,
        [
            (
                "In traditional software, you write the rules.\n\nIn AI products, you shape the behavior.",
                "Good framing for the team offsite.",
            ),
            ("Prototyping is cheap; evaluation is expensive.", None),
        ],
    ),
    "raindrop": (
        _raindrop,
        [
            ("Executors poll futures until they are ready.", None),
            ("Nothing happens until a future is polled.", None),
        ],
    ),
    "wallabag": (_wallabag, [("Executors poll futures until they are ready.", "Key idea")]),
    "karakeep": (
        _karakeep,
        [
            ("Executors poll futures until they are ready.", "Key idea"),
            ("Nothing happens until a future is polled.", None),
        ],
    ),
}


def _annotations(db: Database, url: str) -> tuple[int, list[Annotation]]:
    with db.transaction(write=False) as session:
        card = session.scalars(select(Card).where(Card.url == url)).one()
        rows = session.scalars(
            select(Annotation).where(Annotation.card_pk == card.pk).order_by(Annotation.pk)
        )
        return card.pk, list(rows)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_an_imports_highlights_are_annotations_placed_once_the_page_is_read(
    name: str, bound: Database, account_id: str, pages: PageServer
) -> None:
    reader, wanted = FORMATS[name]
    url = pages.url(f"/{name}")
    pages.routes[f"/{name}"] = (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE)
    _take(bound, _job(bound, account_id), reader(url), last=True)
    pk, kept = _annotations(bound, url)
    assert [(a.quote, a.note) for a in kept] == wanted
    assert all(a.start is None and not a.orphaned for a in kept)  # the page is not known yet
    with bound.transaction(write=False) as session:
        assert "Highlights:" not in (session.get(Card, pk).notes or "")  # type: ignore[union-attr]
    ACTORS["linkMetadata"](pk, now_ms())  # its host's turn taken now (the tests share one host)
    _, placed = _annotations(bound, url)
    with bound.transaction(write=False) as session:
        text = session.scalar(select(Card.source_text).where(Card.pk == pk))
    assert text is not None
    for annotation in placed:
        assert annotation.source == "page" and not annotation.orphaned
        assert annotation.start is not None and annotation.end is not None
        found = text[annotation.start : annotation.end]
        assert found.split() == (annotation.quote or "").split()
