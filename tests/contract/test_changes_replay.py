"""The changes feed under load, in production's shape (PostgreSQL, Redis, two API processes and
a worker process): a client follows nextCursor while 16 writers create, edit, tag, favourite,
archive, trash, restore and delete cards, make and delete folders and merge tags; the feed
replayed into a dictionary then equals, resource by resource, what the API lists."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.servers import redis_server, running_server, server_env
from tests.conftest import fresh_postgres_database

WRITERS = 16
STEPS = 24
TAGS = ["red", "Red", "green", "blue", "teal", "grey"]


@pytest.fixture
def production(tmp_path: Path) -> Iterator[tuple[str, str]]:
    url = fresh_postgres_database("cardvault_replay", "PostgreSQL changes replay")
    with redis_server(tmp_path) as (redis_url, _):
        env = {**server_env(tmp_path, url), "CARDVAULT_REDIS_URL": redis_url}
        with running_server(env, tmp_path, workers=2) as started:
            yield started


class Replica:
    """A client's copy of the account, kept by reading the feed."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.cursor: str | None = None
        self.copy: dict[tuple[str, str], dict[str, Any]] = {}
        self.pages = 0

    def catch_up(self) -> int:
        """Read until the feed has no more now; return how many changes were read."""
        read = 0
        while True:
            params = {"limit": 37} if self.cursor is None else {"limit": 37, "cursor": self.cursor}
            answer = self.client.get("/changes", params=params)
            assert answer.status_code == 200, answer.text
            page = answer.json()
            for item in page["items"]:
                key = (item["type"], item["id"])
                if item["action"] == "upsert":
                    self.copy[key] = item[item["type"]]
                else:
                    self.copy.pop(key, None)
            read += len(page["items"])
            self.pages += 1
            self.cursor = page["pageInfo"]["nextCursor"]
            if not page["pageInfo"]["hasMore"]:
                return read

    def of(self, kind: str) -> dict[str, dict[str, Any]]:
        return {rid: resource for (k, rid), resource in self.copy.items() if k == kind}


def write(client: httpx.Client, seed: int, folders: list[str], operations: list[str]) -> None:
    """One writer's mix of changes to its own cards and the account's shared tags and folders."""
    rng = random.Random(seed)
    mine: list[str] = []
    for step in range(STEPS):
        roll = rng.random()
        if not mine or roll < 0.3:
            body = {"content": f"writer {seed} step {step}", "tags": rng.sample(TAGS, 2)}
            answer = client.post("/cards", json=body)
            assert answer.status_code == 200, answer.text
            mine.append(answer.json()["cardId"])
            continue
        card = rng.choice(mine)
        if roll < 0.5:
            answer = client.patch(
                f"/cards/{card}", json={"content": f"edit {step}", "tags": rng.sample(TAGS, 3)}
            )
        elif roll < 0.6:
            answer = client.patch(f"/cards/{card}/favorite", json={"isFavorited": rng.random() < 0.5})
        elif roll < 0.65:
            answer = client.post(f"/cards/{card}/archive")
        elif roll < 0.75:
            answer = client.post(f"/cards/{card}/trash")
        elif roll < 0.8:
            answer = client.post(f"/cards/{card}/restore")
        elif roll < 0.85:
            client.post(f"/cards/{card}/trash")
            answer = client.delete(f"/cards/{card}")
            if answer.status_code == 204:
                mine.remove(card)
        elif roll < 0.92 and folders:
            answer = client.post(f"/folders/{rng.choice(folders)}/cards", json={"cardIds": [card]})
        elif seed % 4 == 0:
            tag, into = rng.sample(TAGS, 2)
            answer = client.post("/tags/merge", json={"from": tag, "into": into})
            if answer.status_code == 202:
                operations.append(answer.json()["id"])
        else:
            answer = client.post("/folders", json={"name": f"writer {seed} step {step}"})
            if answer.status_code == 201:
                folders.append(answer.json()["id"])
        # 404: another writer's merge took the tag, or the folder went; 409: one tag
        # operation at a time, or a card in Trash; 429: a rate limit. All change nothing.
        assert answer.status_code in (200, 201, 202, 204, 404, 409, 429), answer.text


def everything(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        answer = client.get(path, params={**params, "limit": 100, **({"cursor": cursor} if cursor else {})})
        assert answer.status_code == 200, answer.text
        items += answer.json()["items"]
        cursor = answer.json()["pageInfo"]["nextCursor"]
        if cursor is None:
            return items


def quiet(client: httpx.Client, operations: list[str]) -> list[dict[str, Any]]:
    """Wait until no tag operation runs and no card is being processed; answer every card as
    getExtendedCard shows it."""
    deadline = time.monotonic() + 60
    while True:
        listed = everything(client, "/cards", archived="include") + everything(client, "/trash")
        cards = [client.get(f"/cards/{item['id']}/extended").json() for item in listed]
        busy = [
            c["id"] for c in cards if (c["processingStatus"] or {}).get("state") in ("pending", "running")
        ]
        running = [o for o in operations if client.get(f"/tags/operations/{o}").json()["status"] == "running"]
        if not busy and not running:
            return cards
        assert time.monotonic() < deadline, (busy, running)
        time.sleep(0.2)


def test_a_client_following_the_feed_during_16_writers_ends_with_the_servers_state(
    production: tuple[str, str],
) -> None:
    base, key = production
    headers = {"Authorization": f"Bearer {key}"}
    clients = [httpx.Client(base_url=base, headers=headers, timeout=60) for _ in range(WRITERS + 1)]
    replica = Replica(clients[-1])
    folders: list[str] = []
    operations: list[str] = []
    done = threading.Event()
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            write(clients[n], n, folders, operations)
        except BaseException as exc:  # reported below, with the others
            failures.append(exc)

    def reader() -> None:
        try:
            while not done.is_set():
                replica.catch_up()
        except BaseException as exc:
            failures.append(exc)

    following = threading.Thread(target=reader)
    following.start()
    writers = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    following.join()
    assert failures == []
    api = clients[0]
    cards = quiet(api, operations)
    replica.catch_up()
    assert replica.pages > 3  # it read while the writers wrote
    assert len(cards) > WRITERS
    assert replica.of("card") == {card["id"]: card for card in cards}
    tags = everything(api, "/tags")
    assert {t["name"].casefold(): t for t in tags} == replica.of("tag")
    listed_folders = everything(api, "/folders")
    assert replica.of("folder") == {f["id"]: f for f in listed_folders}
    assert set(replica.of("tagOperation")) == set(operations)
    assert all(op["status"] in ("completed", "failed") for op in replica.of("tagOperation").values())
    for client in clients:
        client.close()
