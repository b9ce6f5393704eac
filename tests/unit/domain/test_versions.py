"""Versions (cardvault.domain.versions): every write to a card raises its version, whichever
path it takes (the ORM's flush, or a statement in bulk that the changes feed records), every
change a folder shows moves its ETag (its version, or its cardCount alone), and the feed's
``etag`` is the ETag; a webhook's moves with what it shows; a savepoint
rolled back undoes its raise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from cardvault.domain import versions
from cardvault.domain.db import Database
from cardvault.domain.folders import card_counts
from cardvault.domain.models import Card, CardTag, Folder, Webhook
from cardvault.domain.models.pipeline import CardStage
from cardvault.domain.pipeline import processing
from tests.conftest import Api
from tests.unit.handlers.test_cards_conditional import settled_card
from tests.unit.handlers.test_exports import settled
from tests.unit.handlers.test_tags import wait_done

Step = Callable[[], object]


def _stored(database: Database, account_id: str) -> dict[tuple[str, str], tuple[int, str]]:
    """Every card's and folder's version and ETag, by (kind, id)."""
    with database.transaction(write=False) as session:
        cards = session.execute(select(Card.id, Card.version).where(Card.account_id == account_id)).all()
        folders = session.execute(
            select(Folder.id, Folder.version).where(Folder.account_id == account_id)
        ).all()
        counts = card_counts(session, [i for i, _ in folders])
        return {
            **{("card", i): (v, versions.etag(v)) for i, v in cards},
            **{("folder", i): (v, versions.folder_etag(v, counts[i])) for i, v in folders},
        }


def _fed(api: Api, cursor: str) -> tuple[dict[tuple[str, str], str | None], str]:
    """What the changes feed recorded after ``cursor``: each resource's etag (None: deleted)."""
    seen: dict[tuple[str, str], str | None] = {}
    while True:
        page = api.get("/v1/changes", params={"cursor": cursor}).json()
        for item in page["items"]:
            if item["type"] in ("card", "folder"):
                seen[(item["type"], item["id"])] = item["etag"]
        cursor = page["pageInfo"]["nextCursor"]
        if not page["pageInfo"]["hasMore"]:
            return seen, cursor


def test_every_write_the_feed_records_raises_the_version_it_shows(api: Api, database: Database) -> None:
    """Runs writes of every path (the ORM's, a tag operation's batch rewrite, a folder's delete,
    Trash, a stage's result) and checks after each one: each card or folder the feed recorded
    has a higher version, equal to the feed's etag and to its GET's ETag, and nothing the feed
    did not record moved. A write path that forgot the version fails here."""
    card, _ = settled_card(api, tags=["Old"], url="https://example.com/a")
    other, _ = settled_card(api, tags=["Old", "Other"])
    c, o = card["id"], other["id"]
    folder = api.post("/v1/folders", json={"name": "F"}).json()["id"]
    kept = api.post("/v1/folders", json={"name": "K"}).json()["id"]

    def rename() -> None:
        wait_done(api, api.post("/v1/tags/rename", json={"from": "old", "to": "New"}).json())

    steps: list[tuple[str, Step]] = [
        ("edit", lambda: api.patch(f"/v1/cards/{c}", json={"notes": "n"})),
        ("favorite", lambda: api.patch(f"/v1/cards/{c}/favorite", json={"isFavorited": True})),
        ("into folders", lambda: api.post(f"/v1/folders/{folder}/cards", json={"cardIds": [c, o]})),
        ("into the kept folder", lambda: api.post(f"/v1/folders/{kept}/cards", json={"cardIds": [o]})),
        ("rename a tag (batch rewrite)", rename),
        (
            "merge a tag",
            lambda: wait_done(api, api.post("/v1/tags/merge", json={"from": "new", "into": "Other"}).json()),
        ),
        ("archive", lambda: api.post(f"/v1/cards/{c}/archive")),
        ("delete a folder (its cards' folderIds)", lambda: api.request("DELETE", f"/v1/folders/{folder}")),
        ("trash (the kept folder's cardCount)", lambda: api.post(f"/v1/cards/{o}/trash")),
        ("restore", lambda: api.post(f"/v1/cards/{o}/restore")),
        (
            "out of a folder",
            lambda: api.request("DELETE", f"/v1/folders/{kept}/cards", json={"cardIds": [o]}),
        ),
        ("refresh (the pipeline's results)", lambda: (api.post(f"/v1/cards/{c}/refresh"), settled(api, c))),
    ]
    cursor = api.get("/v1/changes", params={"cursor": "latest"}).json()["pageInfo"]["nextCursor"]
    for name, step in steps:
        before = _stored(database, api.account_id)
        step()
        after = _stored(database, api.account_id)
        fed, cursor = _fed(api, cursor)
        assert fed, name
        for key, etag in fed.items():
            if etag is None:
                continue
            version, current = after[key]
            assert current != before.get(key, (0, ""))[1], (name, key)
            assert version >= before.get(key, (0, ""))[0], (
                name,
                key,
            )  # a folder's: its cardCount may move alone
            assert etag == current, (name, key)
            path = f"/v1/cards/{key[1]}" if key[0] == "card" else f"/v1/folders/{key[1]}"
            assert api.get(path).headers["etag"] == etag, (name, key)
            if key[0] == "card":
                assert version > before.get(key, (0, ""))[0], (name, key)
        moved = {key for key in after if after[key] != before.get(key)}
        assert moved <= set(fed), (name, moved - set(fed))


def _webhook(database: Database, account_id: str, **values: Any) -> int:
    with database.transaction() as session:
        hook = session.scalars(select(Webhook).where(Webhook.account_id == account_id)).one()
        for name, value in values.items():
            setattr(hook, name, value)
    with database.transaction(write=False) as session:
        return int(session.scalars(select(Webhook.version).where(Webhook.account_id == account_id)).one())


def test_a_webhook_moves_with_what_it_shows_not_its_bookkeeping(api: Api, database: Database) -> None:
    api.post("/v1/webhooks", json={"url": "https://hooks.example.com/x", "events": ["*"]})
    first = _webhook(database, api.account_id)
    assert _webhook(database, api.account_id, position=5, sending_lease="l", sending_until=1) == first
    assert _webhook(database, api.account_id, paused_until=123) == first + 1


def test_one_raise_per_transaction_and_a_rolled_back_savepoint_undoes_its_own(
    api: Api, database: Database
) -> None:
    card, _ = settled_card(api)
    with database.transaction() as session:
        row = session.scalars(select(Card).where(Card.id == card["id"])).one()
        start = row.version
        row.notes = "one"
        session.flush()
        row.notes = "two"
        session.flush()
        assert row.version == start + 1
    with database.transaction() as session:
        row = session.scalars(select(Card).where(Card.id == card["id"])).one()
        savepoint = session.begin_nested()
        row.notes = "undone"
        session.flush()
        savepoint.rollback()
        row.notes = "kept"
    with database.transaction(write=False) as session:
        row = session.scalars(select(Card).where(Card.id == card["id"])).one()
        assert (row.notes, row.version) == ("kept", start + 2)


def _version(database: Database, card_id: str) -> int:
    with database.transaction(write=False) as session:
        return int(session.scalars(select(Card.version).where(Card.id == card_id)).one())


def test_a_stage_skipped_at_its_start_a_queue_and_a_tag_row_alone_raise_the_version(
    api: Api, database: Database
) -> None:
    """What the extended card shows moves its ETag: a follower skipped when it starts after
    the stage it follows failed (the usual end of a link whose page fails), stages queued
    again (a refresh with nothing to forget), and a tag row re-spelled alone."""
    card, _ = settled_card(api, url="https://example.com/a", tags=["Work"])
    with database.transaction() as session:
        row = session.scalars(select(Card).where(Card.id == card["id"])).one()
        pk = row.pk
        for stage in session.scalars(select(CardStage).where(CardStage.card_pk == pk)):
            stage.state = "failed" if stage.stage == "linkMetadata" else "pending"
    start = _version(database, card["id"])
    with database.transaction() as session:
        settled_now = processing.start(session, card_pk=pk, stage="linkPreview", stale_before=0)
    assert isinstance(settled_now, processing.Settled)
    assert _version(database, card["id"]) == start + 1
    with database.transaction() as session:
        row = session.scalars(select(Card).where(Card.id == card["id"])).one()
        processing.queue(session, row, ["linkPreview"])
    assert _version(database, card["id"]) == start + 2
    with database.transaction() as session:
        tag = session.scalars(select(CardTag).where(CardTag.card_pk == pk)).one()
        holder = session.scalars(select(Card).where(Card.pk == pk)).one()  # the card is in the session
        tag.name = "WORK"
        assert holder.tags == ["WORK"]
    assert _version(database, card["id"]) == start + 3
