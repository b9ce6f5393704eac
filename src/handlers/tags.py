"""Tag operations: thin edges over cardvault.domain.tags.operations; work is sent to workers."""

from __future__ import annotations

import functools
from typing import Any

from cardvault.domain.db import after_commit
from cardvault.domain.models import TagOperation
from cardvault.domain.tags import operations
from cardvault.handlers.http import runtime
from cardvault.handlers.http.paging import page_json
from cardvault.workers.tags import run_tag_operation


def operation_json(operation: TagOperation) -> dict[str, Any]:
    return {
        "id": operation.id,
        "operationId": operation.id,
        "kind": operation.kind,
        "from": operation.from_key,
        "to": operation.to_name,
        "status": operation.status,
        "total": operation.total,
        "processed": operation.processed,
        "changed": operation.changed,
        "error": operation.error,
        "createdAt": operation.created_at,
        "updatedAt": operation.updated_at,
        "completedAt": operation.completed_at,
    }


def _start(user: str, kind: str, tag: str, to: str | None) -> tuple[dict[str, Any], int, dict[str, str]]:
    with runtime.current().db.transaction() as session:
        operation = operations.start_tag_operation(session, account_id=user, kind=kind, tag=tag, to=to)
        # Sent once the row is committed (which, under an Idempotency-Key, is after this block);
        # the sweeper covers a lost send.
        after_commit(session, functools.partial(run_tag_operation.send, operation.id))
        return operation_json(operation), 202, {"Location": f"/v1/tags/operations/{operation.id}"}


def rename_tag(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    return _start(user, "rename", body["from"], body["to"])


def merge_tag(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    return _start(user, "merge", body["from"], body["into"])


def delete_tag(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    return _start(user, "delete", body["tag"], None)


def get_tag_operation(operation_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        operation = operations.get_tag_operation(session, account_id=user, operation_id=operation_id)
        return operation_json(operation)


def list_tags(user: str, sort: str = "name", limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        page = operations.list_tags(
            session, account_id=user, secret=rt.settings.secret_key, sort=sort, limit=limit, cursor=cursor
        )
    return page_json(
        [{"name": tag.name, "count": tag.count} for tag in page.tags], page.next_cursor, page.total
    )
