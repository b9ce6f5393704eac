"""Annotation operations: thin edges over cardvault.domain.annotations."""

from __future__ import annotations

from typing import Any

from cardvault.domain.annotations import records
from cardvault.domain.models import Annotation
from cardvault.domain.portability import archive
from cardvault.handlers.http import runtime


def annotation_json(annotation: Annotation) -> dict[str, Any]:
    # What our export's archive holds of it (one shape for both), with its ids.
    return {"id": annotation.id, "cardId": annotation.card_id, **archive.annotation_record(annotation)}


def create_annotation(
    card_id: str, body: dict[str, Any], user: str
) -> tuple[dict[str, Any], int, dict[str, str]]:
    with runtime.current().db.transaction() as session:
        annotation = records.create(
            session,
            account_id=user,
            card_id=card_id,
            quote=body.get("quote"),
            prefix=body.get("prefix"),
            suffix=body.get("suffix"),
            note=body.get("note"),
            color=body.get("color"),
        )
        shown = annotation_json(annotation)
    return shown, 201, {"Location": f"/v1/annotations/{shown['id']}"}


def list_card_annotations(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        found = records.of_card(session, account_id=user, card_id=card_id)
        return {"items": [annotation_json(annotation) for annotation in found]}


def list_annotations(
    user: str,
    limit: int = 100,
    cursor: str | None = None,
    card_id: str | None = None,
    color: str | None = None,
) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        page = records.page(
            session,
            account_id=user,
            secret=rt.settings.secret_key,
            limit=limit,
            cursor=cursor,
            card_id=card_id,
            color=color,
        )
        items = [annotation_json(annotation) for annotation in page.annotations]
    return {
        "items": items,
        "pageInfo": {"hasMore": page.next_cursor is not None, "nextCursor": page.next_cursor},
    }


def get_annotation(annotation_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        return annotation_json(records.get(session, account_id=user, annotation_id=annotation_id))


def update_annotation(annotation_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        annotation = records.update(session, account_id=user, annotation_id=annotation_id, **body)
        return annotation_json(annotation)


def delete_annotation(annotation_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        records.delete(session, account_id=user, annotation_id=annotation_id)
    return None, 204
