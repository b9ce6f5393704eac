"""Polling a feed subscription against a local feed server: new entries become link cards once
(a second poll adds none; an entry saved by hand is not saved again), with the subscription's
tags and folder, behind cards saved by hand; ETag honoured; a huge, endless, malformed or
private-address feed fails its poll with a code and changes nothing."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from cardvault.domain import folders, subscriptions
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage, FolderCard, Subscription
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers.subscriptions import poll, send_due
from harness.servers import PageServer, page_server
from tests.unit.workers.stages.conftest import bind


def rss(*links: str, ttl: int | None = None) -> bytes:
    items = "".join(
        f"<item><title>Entry {i}</title><link>{link}</link><description>About {i}</description></item>"
        for i, link in enumerate(links)
    )
    extra = f"<ttl>{ttl}</ttl>" if ttl else ""
    channel = f"<channel><title>T</title>{extra}{items}</channel>"
    return f'<?xml version="1.0"?><rss version="2.0">{channel}</rss>'.encode()


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        yield server


@pytest.fixture
def bound(tmp_path: Path, database: Database, pages: PageServer) -> Settings:
    return bind(tmp_path, database, pages)


def follow(database: Database, account_id: str, url: str, **given: object) -> str:
    with database.transaction() as session:
        return subscriptions.create(session, account_id=account_id, url=url, **given).id  # type: ignore[arg-type]


def cards_of(database: Database, account_id: str) -> list[Card]:
    with database.transaction(write=False) as session:
        found = session.scalars(select(Card).where(Card.account_id == account_id).order_by(Card.pk))
        return [card for card in found]


def state(database: Database, subscription_id: str) -> Subscription:
    with database.transaction(write=False) as session:
        found = session.get(Subscription, subscription_id)
        assert found is not None
        session.expunge(found)
        return found


def test_new_entries_become_cards_once(
    bound: Settings, database: Database, pages: PageServer, account_id: str
) -> None:
    one, two, three = (f"https://example.com/post/{n}" for n in (1, 2, 3))
    with database.transaction() as session:
        editing.add_card(session, account_id=account_id, url=two + "?utm_source=x")  # saved by hand
        folder_id = folders.create_folder(session, account_id=account_id, name="Feeds").id
    pages.routes["/feed.xml"] = (200, {"Content-Type": "application/rss+xml"}, rss(one, two))
    subscription_id = follow(
        database, account_id, pages.url("/feed.xml"), tags=["Blogs"], folder_id=folder_id
    )
    assert poll(broker.services_of(broker.broker), subscription_id) == "saved:1"
    saved = [c for c in cards_of(database, account_id) if c.url == one]
    assert len(saved) == 1 and saved[0].tags == ["Blogs"]
    assert (saved[0].metadata_title, saved[0].metadata_description) == ("Entry 0", "About 0")
    with database.transaction(write=False) as session:
        assert (
            session.scalar(select(FolderCard.folder_id).where(FolderCard.card_pk == saved[0].pk)) == folder_id
        )
        stages = session.scalars(select(CardStage).where(CardStage.card_pk == saved[0].pk)).all()
        assert stages  # queued, as an imported card's
    pages.routes["/feed.xml"] = (200, {"Content-Type": "application/rss+xml"}, rss(three, one, two))
    assert poll(broker.services_of(broker.broker), subscription_id) == "saved:1"
    assert poll(broker.services_of(broker.broker), subscription_id) == "saved:0"
    urls = sorted(c.url or "" for c in cards_of(database, account_id))
    assert urls == sorted([one, two + "?utm_source=x", three])
    polled = state(database, subscription_id)
    assert (polled.entries_saved, polled.last_error) == (2, None) and polled.last_polled_at is not None
    assert polled.next_poll_at - polled.last_polled_at >= subscriptions.POLL_MINUTES * 60_000


def test_the_etag_is_sent_back_and_304_saves_nothing(
    bound: Settings, database: Database, pages: PageServer, account_id: str
) -> None:
    body = rss("https://example.com/a", ttl=90)
    pages.routes["/feed.xml"] = [
        (
            200,
            {
                "Content-Type": "application/rss+xml",
                "ETag": '"v1"',
                "Last-Modified": "Wed, 02 Dec 2026 10:00:00 GMT",
            },
            body,
        ),
        (304, {"ETag": '"v1"'}, b""),
    ]
    subscription_id = follow(database, account_id, pages.url("/feed.xml"))
    services = broker.services_of(broker.broker)
    assert poll(services, subscription_id) == "saved:1"
    first = state(database, subscription_id)
    assert first.next_poll_at - (first.last_polled_at or 0) >= 90 * 60_000  # the feed's ttl
    assert poll(services, subscription_id) == "unchanged"
    second = state(database, subscription_id)  # its poll times moved, nothing else
    assert (second.last_polled_at or 0) >= (first.last_polled_at or 0)
    assert second.next_poll_at == (second.last_polled_at or 0) + subscriptions.POLL_MINUTES * 60_000
    assert (second.etag, second.entries_saved, second.last_error) == ('"v1"', 1, None)
    sent = {k.lower(): v for k, v in pages.seen[-1].items()}
    assert sent["if-none-match"] == '"v1"' and sent["if-modified-since"].startswith("Wed, 02 Dec 2026")
    assert len(cards_of(database, account_id)) == 1


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ((200, {"Content-Type": "text/html"}, b"<html><body>not a feed</body></html>"), "NOT_A_FEED"),
        (
            (200, {"Content-Type": "application/rss+xml"}, b"<rss version='2.0'><channel><item>"),
            "MALFORMED_FEED",
        ),
        ((200, {"Content-Type": "application/feed+json"}, b'{"version": "nope"}'), "NOT_A_FEED"),
        (
            (200, {"Content-Type": "application/rss+xml"}, rss(*(f"https://e.com/{n}" for n in range(1001)))),
            "TOO_MANY_ENTRIES",
        ),
        ((200, {"Content-Type": "application/rss+xml"}, b" " * (10 * 1024 * 1024 + 1)), "FEED_TOO_LARGE"),
        ((500, {"Content-Type": "text/plain"}, b"down"), "FEED_HTTP_ERROR"),
    ],
)
def test_a_bad_feed_fails_its_poll_with_a_code_and_changes_nothing(
    bound: Settings,
    database: Database,
    pages: PageServer,
    account_id: str,
    answer: tuple[int, dict[str, str], bytes],
    code: str,
) -> None:
    pages.routes["/feed.xml"] = answer
    subscription_id = follow(database, account_id, pages.url("/feed.xml"))
    assert poll(broker.services_of(broker.broker), subscription_id) == code
    polled = state(database, subscription_id)
    assert (polled.last_error, polled.entries_saved, polled.failures) == (code, 0, 1)
    assert (
        polled.next_poll_at - (polled.last_polled_at or 0) > subscriptions.POLL_MINUTES * 60_000
    )  # backed off
    assert cards_of(database, account_id) == []


class _Endless(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.recv(65536)
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\n\r\n<rss><channel>")
        try:
            while True:
                self.request.sendall(b"<item><title>x</title></item>" * 1000)
        except OSError:
            return


def test_an_endless_feed_fails_its_poll(tmp_path: Path, database: Database, account_id: str) -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Endless)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        fake = PageServer()
        fake.port = port
        bind(tmp_path, database, fake)
        subscription_id = follow(database, account_id, f"http://127.0.0.1:{port}/feed.xml")
        assert poll(broker.services_of(broker.broker), subscription_id) in ("FEED_TOO_LARGE", "FETCH_TIMEOUT")
        assert cards_of(database, account_id) == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_private_address_is_never_fetched(
    tmp_path: Path, database: Database, pages: PageServer, account_id: str
) -> None:
    bind(tmp_path, database, pages, CARDVAULT_TEST_FETCH_LOOPBACK="false")
    pages.routes["/feed.xml"] = (200, {"Content-Type": "application/rss+xml"}, rss("https://example.com/x"))
    subscription_id = follow(database, account_id, pages.url("/feed.xml").replace("localhost", "127.0.0.1"))
    assert poll(broker.services_of(broker.broker), subscription_id) == "BLOCKED_ADDRESS"
    assert pages.hits == {} and cards_of(database, account_id) == []
    assert state(database, subscription_id).last_error == "BLOCKED_ADDRESS"


def test_due_polls_take_one_feed_of_a_host_at_a_time(
    bound: Settings, database: Database, account_id: str
) -> None:
    made = [follow(database, account_id, f"https://feeds.example.com/{name}.xml") for name in ("a", "b")]
    made.append(follow(database, account_id, "https://other.example.com/c.xml"))
    services = broker.services_of(broker.broker)

    def held() -> set[str]:  # sent, and held back while they run
        with database.transaction(write=False) as session:
            rows = session.execute(
                select(Subscription.id, Subscription.next_poll_at).where(Subscription.id.in_(made))
            )
            return {row_id for row_id, at in rows if at > now_ms()}

    send_due(services)
    first = held()
    assert made[2] in first and len(first & set(made[:2])) == 1  # one feed of the host
    send_due(services)
    assert held() == set(made)  # its other feed, the next round
    broker.broker.flush_all()
