"""Annotation events: told only to an endpoint whose events name them; `*` keeps meaning the
events there were before 1.3.0."""

from __future__ import annotations

from cardvault.domain.annotations import records
from cardvault.domain.db import Database
from tests.unit.domain.webhooks.test_events import _card, _dispatched, _hook


def test_annotation_events_reach_only_endpoints_that_name_them(database: Database, account_id: str) -> None:
    card = _card(database, account_id, "a text to annotate")
    every = _hook(database, account_id, ["*"])
    named = _hook(database, account_id, ["annotation.created", "annotation.updated", "annotation.deleted"])
    with database.transaction() as session:
        made = records.create(session, account_id=account_id, card_id=card, quote="text", note="n").id
    told = _dispatched(database, account_id)
    assert (named, "annotation.created", made) in told
    assert [t for t in told if t[0] == every] == [(every, "card.updated", card)]  # its annotationCount
    with database.transaction() as session:
        records.update(session, account_id=account_id, annotation_id=made, note="changed")
    assert _dispatched(database, account_id) == [(named, "annotation.updated", made)]
    with database.transaction() as session:
        records.delete(session, account_id=account_id, annotation_id=made)
    told = _dispatched(database, account_id)
    assert (named, "annotation.deleted", made) in told
    assert all(t[1].startswith("card.") for t in told if t[0] == every)
