"""Bulk card operations: a thin edge over cardvault.domain.cards.bulk (docs/bulk.md)."""

from __future__ import annotations

from typing import Any

from connexion.context import scope

from cardvault.domain import versions
from cardvault.domain.cards import bulk
from cardvault.domain.db import after_commit
from cardvault.handlers import card_json
from cardvault.handlers.http import conditional, runtime
from cardvault.handlers.http.errors import error_body
from cardvault.workers.files import delete_doomed_objects
from cardvault.workers.pipeline import send_after_commit


def bulk_cards(body: dict[str, Any], user: str) -> dict[str, Any]:
    rt = runtime.current()
    request_id = (scope.get("state") or {}).get("request_id")
    conditions = [
        None
        if bulk.CONDITION not in item
        else conditional.parse(item[bulk.CONDITION], f"items/{index}/{bulk.CONDITION}", "body")
        for index, item in enumerate(body["items"])
    ]
    with rt.db.transaction() as session:
        batch = bulk.apply(
            session,
            account_id=user,
            operation=body["operation"],
            items=body["items"],
            atomic=body.get("atomic", False),
            max_cards=rt.settings.max_cards,
            conditions=conditions,
        )
        session.flush()  # the versions the COMMIT keeps, for each result's etag
        doomed = False
        results = []
        for outcome in batch.outcomes:
            if outcome.error is not None:
                status, error = error_body(outcome.error, request_id)
                results.append(_result(outcome.index, status, outcome.card_id, None, error, None))
                continue
            if outcome.written is not None:
                send_after_commit(session, outcome.written)  # once the one COMMIT is done
                doomed = doomed or bool(outcome.written.stages)
            doomed = doomed or outcome.deleted
            card = None if outcome.card is None else card_json.card_json(outcome.card)
            etag = None if outcome.card is None else versions.etag(outcome.card.version)
            status = 204 if outcome.deleted else 200
            results.append(_result(outcome.index, status, outcome.card_id, card, None, etag))
        if doomed and batch.applied:
            after_commit(session, delete_doomed_objects.send)  # deleted cards' files, old pages' images
    return {"results": results}


def _result(
    index: int,
    status: int,
    card_id: str | None,
    card: dict[str, Any] | None,
    error: dict[str, Any] | None,
    etag: str | None,
) -> dict[str, Any]:
    return {"index": index, "status": status, "cardId": card_id, "card": card, "error": error, "etag": etag}
