"""What the link stages' tests share: a local web server for the pages, the broker bound to
fetch from it, and a link card's stages and row as read back."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from cardvault.bootstrap import bootstrap
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.domain.pipeline import processing, status
from cardvault.settings import Settings
from cardvault.workers import broker
from harness.servers import PageServer, page_server
from tests.conftest import app_env

ARTICLE = b"""<!doctype html><html><head><meta charset="utf-8">
<title>Tide tables | Harbour Notes</title>
<meta property="og:title" content="Reading tide tables">
<meta property="og:image" content="/cover.png">
<meta property="og:site_name" content="Harbour Notes">
<script type="application/ld+json">{"@type": "BlogPosting", "author": {"name": "Ann Lee"},
"datePublished": "2026-03-14T09:30:00+02:00"}</script>
</head><body><article><p>High water comes twice a day.</p></article></body></html>"""


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (640, 480), (20, 90, 160)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        yield server


def bind(tmp_path: Path, database: Database, pages: PageServer, **env: str) -> Settings:
    settings = Settings.from_env(
        {
            **app_env(tmp_path, database),
            "CARDVAULT_FETCH_LINKS": "true",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
            "CARDVAULT_FETCH_PORTS": f"80,443,{pages.port}",
            **env,
        }
    )
    bootstrap(settings, database=database)
    broker.broker.flush_all()
    return settings


@pytest.fixture
def bound(tmp_path: Path, database: Database, pages: PageServer) -> Database:
    bind(tmp_path, database, pages)
    return database


def link(db: Database, account: str, url: str) -> int:
    with db.transaction() as session:
        card = editing.add_card(session, account_id=account, content=url).card
        assert processing.queue(session, card) == ("linkMetadata",)
        return card.pk


def stages(db: Database, pk: int) -> dict[str, tuple[str, int, str | None]]:
    with db.transaction(write=False) as session:
        rows = status.stages_of(session, [pk]).get(pk, [])
        return {r.stage: (r.state, r.attempts, r.error_code) for r in rows}


def card(db: Database, pk: int) -> Card:
    with db.transaction(write=False) as session:
        found = session.get(Card, pk)
        assert found is not None
        session.expunge(found)
        return found
