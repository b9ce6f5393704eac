"""Webhook events from the changes feed (cardvault.domain.webhooks.events): each endpoint is told
each change once, from where it stands, by the events it takes; what changed before a dispatch
is told together; created and processed are told from the feed's marks."""

from __future__ import annotations

import json

from sqlalchemy import select

from cardvault.domain.cards import editing, trash
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import WebhookDelivery
from cardvault.domain.pipeline import processing
from cardvault.domain.tags import operations
from cardvault.domain.webhooks import endpoints, events


def _hook(database: Database, account_id: str, chosen: list[str]) -> str:
    with database.transaction() as session:
        webhook, _ = endpoints.create(
            session, account_id=account_id, url="https://hooks.example/", events=chosen, description=""
        )
        return webhook.id


def _dispatched(database: Database, account_id: str) -> list[tuple[str, str, str]]:
    """Dispatch, and answer the deliveries made (endpoint, event, resource id) in sequence order."""
    with database.transaction() as session:
        made, more = events.dispatch(session, account_id=account_id)
        assert more is False
        ids = [delivery.id for delivery in made]
        rows = session.scalars(select(WebhookDelivery).where(WebhookDelivery.id.in_(ids))).all()
        ordered = sorted(rows, key=lambda d: (d.sequence or 0, d.webhook_id, d.event))
        return [(d.webhook_id, d.event, json.loads(d.body)["data"]["id"]) for d in ordered]


def _card(database: Database, account_id: str, content: str) -> str:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, content=content).card.id


def test_each_endpoint_is_told_each_change_once_by_the_events_it_takes(
    database: Database, account_id: str
) -> None:
    before = _card(database, account_id, "before any webhook")
    every = _hook(database, account_id, ["*"])
    deletes = _hook(database, account_id, ["card.deleted"])
    card = _card(database, account_id, "after")
    assert _dispatched(database, account_id) == [(every, "card.created", card)]
    assert _dispatched(database, account_id) == []  # once
    with database.transaction() as session:
        editing.edit_card(session, account_id=account_id, card_id=before, content="edited")
    assert _dispatched(database, account_id) == [(every, "card.updated", before)]
    with database.transaction() as session:
        trash.move_to_trash(session, account_id=account_id, card_id=card)
        trash.delete_forever(session, account_id=account_id, card_id=card)
    assert _dispatched(database, account_id) == sorted(
        [(every, "card.deleted", card), (deletes, "card.deleted", card)]
    )


def test_a_card_created_and_edited_before_a_dispatch_is_one_created(
    database: Database, account_id: str
) -> None:
    every = _hook(database, account_id, ["*"])
    card = _card(database, account_id, "first")
    with database.transaction() as session:
        editing.edit_card(session, account_id=account_id, card_id=card, content="second")
    assert _dispatched(database, account_id) == [(every, "card.created", card)]


def test_a_new_endpoint_starts_at_the_last_change(database: Database, account_id: str) -> None:
    first = _hook(database, account_id, ["*"])
    card = _card(database, account_id, "told to the first")
    second = _hook(database, account_id, ["*"])
    assert _dispatched(database, account_id) == [(first, "card.created", card)]
    later = _card(database, account_id, "told to both")
    assert _dispatched(database, account_id) == sorted(
        [(first, "card.created", later), (second, "card.created", later)]
    )


def test_the_last_stage_to_settle_tells_card_processed(database: Database, account_id: str) -> None:
    every = _hook(database, account_id, ["card.processed"])
    stages = ["ai", "linkMetadata"]
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="to process").card
        processing.queue(session, card, stages)
        card_pk, card_id = card.pk, card.id
    assert _dispatched(database, account_id) == []  # created: not processed
    for stage in stages:
        with database.transaction() as session:
            taken = processing.start(session, card_pk=card_pk, stage=stage, stale_before=now_ms())
            assert isinstance(taken, processing.Taken)
            processing.finish(session, card_pk=card_pk, stage=stage, lease=taken.lease, state="completed")
        told = _dispatched(database, account_id)
        assert told == ([] if stage == stages[0] else [(every, "card.processed", card_id)])


def _dispatch_all(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        while events.dispatch(session, account_id=account_id)[1]:
            pass


def _rows(database: Database, webhook_id: str) -> list[WebhookDelivery]:
    with database.transaction() as session:
        query = select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id)
        return list(session.scalars(query))


def test_a_rename_over_many_cards_is_one_coalesced_delivery_per_endpoint(
    database: Database, account_id: str
) -> None:
    cards = 300
    with database.transaction() as session:
        for n in range(cards):
            editing.add_card(session, account_id=account_id, content=f"card {n}", tags=["old"])
    hooks = [_hook(database, account_id, ["*"]) for _ in range(3)]
    taking_tags = _hook(database, account_id, ["tag.updated", "tag.deleted"])
    with database.transaction() as session:
        operation = operations.start_tag_operation(
            session, account_id=account_id, kind="rename", tag="old", to="new"
        )
    while True:  # batches of 100 cards, each its own commit and its own dispatch
        with database.transaction() as session:
            more = operations.run_tag_batch(session, operation_id=operation.id, batch_size=100)
        _dispatch_all(database, account_id)
        if not more:
            break
    for webhook_id in hooks:
        (row,) = _rows(database, webhook_id)  # not one per card
        payload = json.loads(row.body)
        assert payload["type"] == events.COALESCED
        told = payload["data"]
        assert told["events"]["card.updated"] == cards and told["count"] == sum(told["events"].values())
        assert told["fromSequence"] <= told["throughSequence"] == row.sequence
    # A few events are told one by one, as the endpoint takes them.
    assert {row.event for row in _rows(database, taking_tags)} <= {"tag.updated", "tag.deleted"}


def test_a_coalesced_delivery_once_tried_is_never_changed(database: Database, account_id: str) -> None:
    webhook_id = _hook(database, account_id, ["*"])
    with database.transaction() as session:
        for n in range(events.COALESCE_AT + 1):
            editing.add_card(session, account_id=account_id, content=f"burst {n}")
    _dispatch_all(database, account_id)
    (first,) = _rows(database, webhook_id)
    with database.transaction() as session:
        tried = session.get(WebhookDelivery, first.id)
        assert tried is not None
        tried.attempts = 1
    _card(database, account_id, "after the first attempt")
    _dispatch_all(database, account_id)
    rows = {row.id: row for row in _rows(database, webhook_id)}
    assert rows[first.id].body == first.body and len(rows) == 2
