"""Share operations: thin edges over cardvault.domain.shares (the pages and feeds a share's
link opens are in cardvault.handlers.web.share_page)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from cardvault.domain import cursors, shares
from cardvault.domain.errors import InvalidInput
from cardvault.domain.models import Share
from cardvault.handlers.http import runtime
from cardvault.handlers.http.paging import page_json


def share_json(session: Session, share: Share) -> dict[str, Any]:
    target = shares.target_of(session, share)
    return {
        "id": share.id,
        "cardId": target.card_id,
        "folderId": target.folder_id,
        "title": share.title,
        "includeNotes": share.include_notes,
        "expiresAt": share.expires_at,
        "createdAt": share.created_at,
        "updatedAt": share.updated_at,
    }


def links(token: str) -> dict[str, str]:
    """The links a share's token opens (cardvault.handlers.web.share_page)."""
    page = f"{runtime.current().settings.public_url}/s/{token}"
    return {"url": page, "feedUrl": f"{page}/feed.atom", "jsonFeedUrl": f"{page}/feed.json"}


def create_share(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    if ("cardId" in body) == ("folderId" in body):
        problem = {"location": "body", "field": "cardId", "message": "exactly one of cardId and folderId"}
        raise InvalidInput("Send exactly one of cardId and folderId.", details={"fields": [problem]})
    with runtime.current().db.transaction() as session:
        share, token = shares.create_share(
            session,
            account_id=user,
            card_id=body.get("cardId"),
            folder_id=body.get("folderId"),
            title=body.get("title"),
            include_notes=body.get("includeNotes", False),
            expires_at=body.get("expiresAt"),
        )
        answer = {**share_json(session, share), **links(token)}
    return answer, 201, {"Location": f"/v1/shares/{share.id}"}


def list_shares(user: str, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        found, next_cursor, total = cursors.newest_first(
            session, Share, account_id=user, secret=rt.settings.secret_key, limit=limit, cursor=cursor
        )
        items = [share_json(session, share) for share in found]
    return page_json(items, next_cursor, total)


def get_share(share_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        return share_json(session, shares.get_share(session, account_id=user, share_id=share_id))


def update_share(share_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    given = {
        name: body[key] for key, name in (("title", "title"), ("expiresAt", "expires_at")) if key in body
    }
    with runtime.current().db.transaction() as session:
        share = shares.update_share(
            session, account_id=user, share_id=share_id, include_notes=body.get("includeNotes"), **given
        )
        return share_json(session, share)


def delete_share(share_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        shares.delete_share(session, account_id=user, share_id=share_id)
    return None, 204
