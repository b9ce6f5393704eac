"""Folder operations: thin edges over cardvault.domain.folders."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy.orm import Session

from cardvault.domain import folders, versions
from cardvault.domain.cards import listing
from cardvault.domain.models import Folder
from cardvault.handlers.http import conditional, runtime
from cardvault.handlers.http.paging import page_json

# An answer with headers (the ETag), or a 304 without a body.
Answer = tuple[dict[str, Any] | None, int, dict[str, str]]


def folder_json(folder: Folder, card_count: int) -> dict[str, Any]:
    return {
        "id": folder.id,
        "name": folder.name,
        "color": folder.color,
        "kind": folder.kind,
        "query": folder.query,
        "cardCount": card_count,
        "createdAt": folder.created_at,
        "updatedAt": folder.updated_at,
    }


def _tagged(
    session: Session, folder: Folder, body: dict[str, Any] | None = None, status: int = 200, **headers: str
) -> Answer:
    """The folder (or ``body``) with the folder's ETag as the transaction leaves it."""
    tag = folders.etag(session, folder, functools.partial(_count, session))
    if body is None:
        body = folder_json(folder, _count(session, folder))
    return conditional.with_etag(body, tag, status, headers)


def _count(session: Session, folder: Folder) -> int:
    return listing.folder_card_counts(session, folder.account_id, [folder])[folder.id]


def _membership_json(result: folders.Membership) -> dict[str, Any]:
    return {"updatedIds": result.updated, "failedIds": result.failed, "folderLimitIds": result.limited}


def create_folder(body: dict[str, Any], user: str) -> tuple[Any, int, dict[str, str]]:
    rt = runtime.current()
    with rt.db.transaction() as session:
        folder = folders.create_folder(
            session,
            account_id=user,
            name=body["name"],
            color=body.get("color"),
            max_folders=rt.settings.max_folders,
            query=body.get("query"),
        )
        made = folder_json(folder, _count(session, folder))
        return _tagged(session, folder, made, 201, Location=f"/v1/folders/{folder.id}")


def list_folders(user: str, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        page = folders.list_folders(
            session, account_id=user, secret=rt.settings.secret_key, limit=limit, cursor=cursor
        )
        counts = listing.folder_card_counts(session, user, page.folders)
        items = [folder_json(folder, counts[folder.id]) for folder in page.folders]
    return page_json(items, page.next_cursor, page.total)


def get_folder(folder_id: str, user: str) -> Answer:
    with runtime.current().db.transaction(write=False) as session:
        folder = folders.get_folder(session, account_id=user, folder_id=folder_id)
        count = _count(session, folder)
        tag = versions.folder_etag(folder.version, count)
        return conditional.unchanged(tag) or conditional.with_etag(folder_json(folder, count), tag)


def _checked(session: Session, folder_id: str, user: str) -> None:
    """The request's If-Match checked against the folder, locked until the write commits."""
    folders.require(
        session,
        account_id=user,
        folder_id=folder_id,
        condition=conditional.if_match(),
        counted=functools.partial(_count, session),
    )


def update_folder(folder_id: str, body: dict[str, Any], user: str) -> Answer:
    color = {"color": body["color"]} if "color" in body else {}
    with runtime.current().db.transaction() as session:
        _checked(session, folder_id, user)
        folder = folders.update_folder(
            session,
            account_id=user,
            folder_id=folder_id,
            name=body.get("name"),
            query=body.get("query"),
            **color,
        )
        return _tagged(session, folder)


def delete_folder(folder_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        _checked(session, folder_id, user)
        folders.delete_folder(session, account_id=user, folder_id=folder_id)
    return None, 204


def add_folder_cards(folder_id: str, body: dict[str, Any], user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, folder_id, user)
        added = folders.add_cards(session, account_id=user, folder_id=folder_id, card_ids=body["cardIds"])
        return _membership_answer(session, added, folder_id, user)


def remove_folder_cards(folder_id: str, body: dict[str, Any], user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, folder_id, user)
        removed = folders.remove_cards(
            session, account_id=user, folder_id=folder_id, card_ids=body["cardIds"]
        )
        return _membership_answer(session, removed, folder_id, user)


def _membership_answer(session: Session, result: folders.Membership, folder_id: str, user: str) -> Answer:
    """The membership result with the folder's ETag after the change."""
    folder = folders.get_folder(session, account_id=user, folder_id=folder_id)
    return _tagged(session, folder, _membership_json(result))
