"""Card operations: thin edges over cardvault.domain.cards.editing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sqlalchemy.orm import Session

from cardvault.domain import versions
from cardvault.domain.cards import adding, captions, editing, facets, listing, reading, thumbnails, trash
from cardvault.domain.clock import now_ms
from cardvault.domain.db import after_commit, lock_tags
from cardvault.domain.files.uploads import Issued
from cardvault.domain.models import Card
from cardvault.domain.pipeline.processing import Written
from cardvault.domain.search import highlights
from cardvault.handlers import card_json
from cardvault.handlers.http import conditional, runtime
from cardvault.handlers.http.paging import page_json
from cardvault.handlers.uploads import upload_json
from cardvault.workers.files import delete_doomed_objects
from cardvault.workers.pipeline import send_after_commit

# An answer with headers (the ETag), or a 304 without a body.
Answer = tuple[dict[str, Any] | None, int, dict[str, str]]


def create_card(body: dict[str, Any], user: str) -> Answer:
    rt = runtime.current()
    with adding.adding_card(
        rt.db,
        rt.store,
        account_id=user,
        file_key=body.get("fileKey"),
        file_etag=body.get("fileEtag"),
        max_cards=rt.settings.max_cards,
        **_new_card(body),
    ) as (session, written):
        card = written.card
        send_after_commit(session, written)
        if body.get("fileKey") is not None:
            after_commit(session, delete_doomed_objects.send)  # the upload's own object
        created = card_json.card_json(card)
        body = {"status": "created", "card": created, "cardId": card.id, "appUrl": created["appUrl"]}
        return conditional.tagged(session, body, card)


# The body's name of each field of a new card (editing.NewCard): cardType for card_type.
_NEW_CARD_FIELDS = {
    "".join(word if i == 0 else word.capitalize() for i, word in enumerate(name.split("_"))): name
    for name in editing.NewCard.__annotations__
}


def _new_card(body: dict[str, Any]) -> editing.NewCard:
    """The new card's fields the body gives."""
    return cast(editing.NewCard, {name: body[key] for key, name in _NEW_CARD_FIELDS.items() if key in body})


def list_cards(
    user: str,
    q: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    sort: str | None = None,
    type_: list[str] | None = None,  # the spec's `type`, renamed by Connexion (it shadows a builtin)
    tag: list[str] | None = None,
    favorited: bool | None = None,
    created_after: int | None = None,
    created_before: int | None = None,
    include: list[str] | None = None,
    archived: str | None = None,
    folder: list[str] | None = None,
    processing_state: str | None = None,
    url: str | None = None,
) -> dict[str, Any]:
    rt = runtime.current()
    filters = listing.CardFilter(
        sort=sort,
        card_types=tuple(type_ or ()),
        tags=tuple(tag or ()),
        favorited=favorited,
        created_after=created_after,
        created_before=created_before,
        q=q,
        archived=archived,
        folders=tuple(folder or ()),
        processing_state=processing_state,
        url=url,
    )
    groups = set(include or [])
    counted = bool(groups & {"total", "facets"})
    with rt.db.transaction(write=False, snapshot=counted) as session:
        page = listing.list_cards(
            session,
            account_id=user,
            secret=rt.settings.secret_key,
            filters=filters,
            limit=limit,
            cursor=cursor,
            with_total="total" in groups,
            explain="explain" in groups,
        )
        stages = card_json.stages_for_list(session, page.cards, groups)
        found = facets.facets(session, account_id=user, filters=filters) if "facets" in groups else None
    items = [card_json.list_item_json(card, groups, stages.get(card.pk)) for card in page.cards]
    if "highlights" in groups:
        budget = highlights.Budget()  # one for the page
        for item, card in zip(items, page.cards, strict=True):
            item["highlights"] = highlights.highlights(highlights.fields_of(card), page.query, budget)
    if "explain" in groups:
        explained = page.explained or {}
        for item, card in zip(items, page.cards, strict=True):
            item["explain"] = card_json.explanation_json(page.plan, explained.get(card.pk))
    body = page_json(items, page.next_cursor, page.total, total_capped=page.total_capped)
    if found is not None:
        body["facets"] = _facets_json(found)
    return body


def _facets_json(found: facets.Facets) -> dict[str, Any]:
    return {
        "types": [{"type": card_type, "count": n} for card_type, n in found.types],
        "tags": [{"name": name, "count": n} for name, n in found.tags],
        "capped": found.capped,
    }


def get_card(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction(write=False, snapshot=False) as session:
        card = reading.get_card_view(session, account_id=user, card_id=card_id)
    tag = versions.etag(card.version)
    return conditional.unchanged(tag) or conditional.with_etag(card_json.card_json(card), tag)


def get_extended_card(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction(write=False) as session:
        card = editing.get_card(session, account_id=user, card_id=card_id)
        tag = versions.etag(card.version)
        return conditional.unchanged(tag) or conditional.with_etag(card_json.extended(session, card), tag)


def _checked(session: Session, card_id: str, user: str) -> None:
    """The request's If-Match checked against the card, locked until the write commits. The
    account's tag lock (shared) comes first, as the card's writers that take it take it before
    the card (the lock order in cardvault.domain.db)."""
    if conditional.sent(b"if-match"):
        lock_tags(session, account_id=user)
        conditional.require(session, Card, account_id=user, row_id=card_id)


def update_card(card_id: str, body: dict[str, Any], user: str) -> Answer:
    notes = {"notes": body["notes"]} if "notes" in body else {}
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        edited = editing.edit_card(
            session,
            account_id=user,
            card_id=card_id,
            content=body.get("content"),
            tags=body.get("tags"),
            url=body.get("url"),
            **notes,
        )
        send_after_commit(session, edited)
        if edited.stages:
            after_commit(session, delete_doomed_objects.send)  # the old page's image
        return conditional.tagged(session, card_json.card_json(edited.card), edited.card)


def set_card_favorite(card_id: str, body: dict[str, Any], user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        card = editing.set_favorite(
            session, account_id=user, card_id=card_id, is_favorited=body["isFavorited"]
        )
        return conditional.tagged(session, card_json.card_json(card), card)


def mark_card_done(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        card = editing.mark_done(session, account_id=user, card_id=card_id)
        return conditional.tagged(session, card_json.done_card_json(session, card), card)


def refresh_card(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        edited = editing.refresh(session, account_id=user, card_id=card_id)
        send_after_commit(session, edited)
        body = {"cardId": card_id, "requestedAt": now_ms(), "status": "queued"}
        return conditional.tagged(session, body, edited.card, 202)


def trash_card(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        card = trash.move_to_trash(session, account_id=user, card_id=card_id)
        return conditional.tagged(session, card_json.extended(session, card), card)


def restore_card(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        card = trash.restore(session, account_id=user, card_id=card_id)
        return conditional.tagged(session, card_json.extended(session, card), card)


def delete_card(card_id: str, user: str) -> tuple[None, int]:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        trash.delete_forever(session, account_id=user, card_id=card_id)
        after_commit(session, delete_doomed_objects.send)  # its files (the sweeper also sends it)
    return None, 204


def archive_card(card_id: str, user: str) -> Answer:
    return _set_archived(card_id, user, is_archived=True)


def unarchive_card(card_id: str, user: str) -> Answer:
    return _set_archived(card_id, user, is_archived=False)


def _set_archived(card_id: str, user: str, *, is_archived: bool) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        card = editing.set_archived(session, account_id=user, card_id=card_id, is_archived=is_archived)
        return conditional.tagged(session, card_json.extended(session, card), card)


def create_card_thumbnail_upload(card_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    return _issue_upload(thumbnails.issue_upload, card_id, body, user)


def replace_card_thumbnail(card_id: str, body: dict[str, Any], user: str) -> Answer:
    """The uploaded image, decoded and stored as the card's renditions."""
    return _replace_file(
        card_id,
        user,
        body["fileKey"],
        check=thumbnails.check,
        make=lambda rt, checked: thumbnails.render(rt.store, rt.decoder, checked, card_id=card_id),
        apply=lambda session, made: thumbnails.apply(
            session, account_id=user, card_id=card_id, replacement=made
        ),
    )


def create_card_captions_upload(card_id: str, body: dict[str, Any], user: str) -> dict[str, Any]:
    return _issue_upload(captions.issue_upload, card_id, body, user)


def replace_card_captions(card_id: str, body: dict[str, Any], user: str) -> Answer:
    """The uploaded caption file, its cues read and the file kept as the card's."""
    return _replace_file(
        card_id,
        user,
        body["fileKey"],
        check=captions.check,
        make=lambda rt, checked: captions.read(rt.store, rt.decoder, *checked, card_id=card_id),
        apply=lambda session, made: captions.apply(session, account_id=user, card_id=card_id, attached=made),
    )


def _issue_upload(
    issue: Callable[..., Issued], card_id: str, body: dict[str, Any], user: str
) -> dict[str, Any]:
    """An upload URL for a file the card takes (its image, its caption file)."""
    rt = runtime.current()
    with rt.db.transaction() as session:
        _checked(session, card_id, user)
        issued = issue(
            session,
            rt.store,
            account_id=user,
            card_id=card_id,
            file_name=body["fileName"],
            file_size=body["fileSize"],
            mime_type=body["mimeType"],
            quotas=rt.quotas,
        )
    return upload_json(issued)


def _replace_file(
    card_id: str,
    user: str,
    file_key: str,
    *,
    check: Callable[..., Any],
    make: Callable[[runtime.Runtime, Any], Any],
    apply: Callable[[Session, Any], Written],
) -> Answer:
    """Check the card and its upload, then make what the card keeps from the file outside any
    transaction (it takes a while), then apply it."""
    rt = runtime.current()
    with rt.db.transaction(write=False) as session:
        if conditional.sent(b"if-match"):  # refused before the file is made (checked again below)
            conditional.require_on(editing.get_card(session, account_id=user, card_id=card_id))
        checked = check(session, rt.store, account_id=user, card_id=card_id, file_key=file_key)
        if isinstance(checked, Card):  # a repeated PUT: this file is the card's already
            conditional.require_on(checked)
            return conditional.with_etag(card_json.extended(session, checked), versions.etag(checked.version))
    # What is made for nothing (this request then fails) is deleted with its upload once that
    # is 24 hours old; a retry with the same upload makes and uses the same objects.
    made = make(rt, checked)
    with rt.db.transaction() as session:
        _checked(session, card_id, user)
        edited = apply(session, made)
        after_commit(session, delete_doomed_objects.send)  # the file it replaces
        send_after_commit(session, edited)
        return conditional.tagged(session, card_json.extended(session, edited.card), edited.card)


def delete_card_captions(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        edited = captions.remove(session, account_id=user, card_id=card_id)
        if edited.stages:
            after_commit(session, delete_doomed_objects.send)
        send_after_commit(session, edited)
        return conditional.tagged(session, card_json.extended(session, edited.card), edited.card)


def reset_card_thumbnail(card_id: str, user: str) -> Answer:
    with runtime.current().db.transaction() as session:
        _checked(session, card_id, user)
        edited = thumbnails.reset(session, account_id=user, card_id=card_id)
        after_commit(session, delete_doomed_objects.send)  # the replaced image's renditions
        send_after_commit(session, edited)  # the page's image again
        return conditional.tagged(session, card_json.extended(session, edited.card), edited.card)
