"""Card operations: thin edges over cardvault.domain.cards."""

from __future__ import annotations

from typing import Any

from cardvault.domain import card_views, cards, trash
from cardvault.domain.card_views import CardView
from cardvault.domain.models import Card
from cardvault.handlers import runtime
from cardvault.handlers.pages import page_json

_NO_FILE = {
    "compactUrl": None,
    "placeholderUrl": None,
    "detailUrl": None,
    "fileExtension": None,
    "fileKind": None,
    "fileLanguage": None,
    "filePreview": None,
    "fileUrl": None,
    "screenshotUrl": None,
    "thumbnailUrl": None,
    "linkPreviewImageUrl": None,
}


def _app_url(card: Card | CardView) -> str:
    return f"{runtime.current().settings.public_url}/cards/{card.id}"


def _base_json(card: Card | CardView) -> dict[str, Any]:
    """The fields every card representation carries."""
    return {
        "id": card.id,
        "type": card.type,
        "createdAt": card.created_at,
        "updatedAt": card.updated_at,
        "appUrl": _app_url(card),
        "aiTags": card.ai_tags,
        "tags": card.tags,
        "isFavorited": card.is_favorited,
        "folderIds": card.folder_ids,
        "url": card.url,
        "fileName": card.file_name,
        "fileSize": card.file_size,
        "mimeType": card.mime_type,
        **_NO_FILE,
    }


def _card_json(card: Card | CardView) -> dict[str, Any]:
    return {
        **_base_json(card),
        "content": card.content,
        "notes": card.notes,
        "aiSummary": card.ai_summary,
        "metadataTitle": card.metadata_title,
        "metadataDescription": card.metadata_description,
    }


def list_item_json(card: Card | CardView, include: set[str]) -> dict[str, Any]:
    """A card as an item of a list (also used by the Trash list)."""
    item = _base_json(card)
    for name in ("linkPreviewImageUrl", "filePreview"):
        del item[name]
    if "content" in include:
        item.update(content=card.content, notes=card.notes, aiSummary=card.ai_summary)
    if "metadata" in include:
        item.update(
            metadataTitle=card.metadata_title,
            metadataDescription=card.metadata_description,
            linkPreviewImageUrl=None,
            filePreview=None,
        )
    if "processing" in include:
        item["processingStatus"] = None
    return item


def _extended_card_json(card: Card | CardView) -> dict[str, Any]:
    return {
        **_card_json(card),
        "aiTranscript": card.ai_transcript,
        "isDeleted": card.deleted_at is not None,
        "isArchived": card.archived_at is not None,
        "archivedAt": card.archived_at,
        "metadataStatus": None,
        "processingStatus": None,
        "linkPreviewTitle": None,
        "linkPreviewDescription": None,
        "linkFacts": [],
        "linkPrice": None,
        "linkFaviconUrl": None,
        "linkSiteName": None,
        "linkAuthor": None,
        "linkPublisher": None,
        "linkPublishedAt": None,
        "linkPreviewMedia": [],
        "fileWidth": None,
        "fileHeight": None,
        "audioWaveform": None,
        "videoScrub": None,
        "colors": [],
        "thumbnailOverridden": False,
    }


def _done_card_json(card: Card) -> dict[str, Any]:
    """The extended card with the fields only mark-done returns."""
    return {
        **_extended_card_json(card),
        "completedAt": card.completed_at,
        "isHidden": False,
        "linkCategory": None,
        "sourceTitle": None,
        "sourceUrl": None,
    }


def create_card(body: dict[str, Any], user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        card = cards.add_card(
            session,
            account_id=user,
            card_type=body.get("cardType"),
            content=body.get("content"),
            notes=body.get("notes"),
            tags=body.get("tags", ()),
            url=body.get("url"),
            source=body.get("source"),
            file_key=body.get("fileKey"),
            file_name=body.get("fileName"),
            file_size=body.get("fileSize"),
            mime_type=body.get("mimeType"),
        )
        card_json = _card_json(card)
    return {"status": "created", "card": card_json, "cardId": card.id, "appUrl": card_json["appUrl"]}


def list_cards(
    user: str,
    q: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    sort: str = "newest",
    type_: str | None = None,  # the spec's `type`, renamed by Connexion (it shadows a builtin)
    tag: str | None = None,
    favorited: bool | None = None,
    created_after: int | None = None,
    created_before: int | None = None,
    include: list[str] | None = None,
    archived: str = "exclude",
    folder: str | None = None,
) -> dict[str, Any]:
    rt = runtime.current()
    filters = card_views.CardFilter(
        sort=sort,
        card_type=type_,
        tag=tag,
        favorited=favorited,
        created_after=created_after,
        created_before=created_before,
        q=q,
        archived=archived,
        folder=folder,
    )
    groups = set(include or [])
    with rt.db.transaction(write=False, snapshot="total" in groups) as session:
        page = card_views.list_cards(
            session,
            account_id=user,
            secret=rt.settings.secret_key,
            filters=filters,
            limit=limit,
            cursor=cursor,
            with_total="total" in groups,
        )
    return page_json(
        [list_item_json(card, groups) for card in page.cards],
        page.next_cursor,
        page.total,
        total_capped=page.total_capped,
    )


def get_card(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False, snapshot=False) as session:
        card = card_views.get_card_view(session, account_id=user, card_id=card_id)
    return _card_json(card)


def get_extended_card(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False, snapshot=False) as session:
        card = card_views.get_card_view(session, account_id=user, card_id=card_id)
    return _extended_card_json(card)


def update_card(card_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    notes = {"notes": body["notes"]} if "notes" in body else {}
    with runtime.current().db.transaction() as session:
        card = cards.update_card(
            session,
            account_id=user,
            card_id=card_id,
            content=body.get("content"),
            tags=body.get("tags"),
            url=body.get("url"),
            **notes,
        )
        return _card_json(card)


def set_card_favorite(card_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        card = cards.set_favorite(session, account_id=user, card_id=card_id, is_favorited=body["isFavorited"])
        return _card_json(card)


def mark_card_done(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return _done_card_json(cards.mark_done(session, account_id=user, card_id=card_id))


def trash_card(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return _extended_card_json(trash.move_to_trash(session, account_id=user, card_id=card_id))


def restore_card(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return _extended_card_json(trash.restore(session, account_id=user, card_id=card_id))


def delete_card(card_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        trash.delete_forever(session, account_id=user, card_id=card_id)
    return None, 204


def archive_card(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return _extended_card_json(
            cards.set_archived(session, account_id=user, card_id=card_id, is_archived=True)
        )


def unarchive_card(card_id: str, user: str) -> dict[str, Any]:
    with runtime.current().db.transaction() as session:
        return _extended_card_json(
            cards.set_archived(session, account_id=user, card_id=card_id, is_archived=False)
        )
