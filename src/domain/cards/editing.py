"""Cards: creating, reading, editing, favoriting, marking done and listing them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypedDict, Unpack

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from cardvault.adapters.blobs import BlobStore
from cardvault.domain import links
from cardvault.domain.annotations.placing import place_again
from cardvault.domain.cards import holdings
from cardvault.domain.cards.classify import infer_card_type, url_in
from cardvault.domain.clock import now_ms
from cardvault.domain.db import lock_tags
from cardvault.domain.errors import CardInTrash, ContentTooLarge, FileRequired, InvalidInput, TypeMismatch
from cardvault.domain.files import filetypes, held, quotas, uploads
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card, get_owned
from cardvault.domain.pipeline import processing
from cardvault.domain.pipeline.processing import Written
from cardvault.domain.search.index import index_card, index_cards
from cardvault.domain.tags import counts
from cardvault.domain.tags.names import clean_tags
from cardvault.domain.tags.rows import replace_tags

MAX_CONTENT_BYTES = 512 * 1024
FILE_CARD_TYPES = ("image", "video", "audio", "document")  # cards whose item is a file
_UNSET = object()


def check_content_size(content: str) -> None:
    """Refuse a content over 512 KiB of UTF-8."""
    size = len(content.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise ContentTooLarge("content", limit=MAX_CONTENT_BYTES, actual=size)


class NewCard(TypedDict, total=False):
    """What a new card is given (createCard's body, an import's entry): each field may be left
    out (None; no tags). The upload a file card takes is named apart (``adding.adding_card``)."""

    card_type: str | None  # inferred from content and url when not given
    content: str | None
    notes: str | None
    tags: Sequence[str]
    url: str | None
    source: str | None
    file_name: str | None
    file_size: int | None
    mime_type: str | None


def add_card(
    session: Session,
    *,
    account_id: str,
    file: uploads.TakenFile | None = None,
    created_at: int | None = None,
    max_cards: int | None = None,
    counted: bool = True,
    queued: bool = False,
    imported: bool = False,
    **given: Unpack[NewCard],
) -> Written:
    """Create a card; its type is inferred from content and url when not given. A card that
    takes an uploaded ``file`` (see ``check_file``) marks its upload taken. ``created_at`` is
    for imports, which keep a card's time. ``max_cards``: the cards the account may hold
    (CardLimitReached past it); ``counted=False``: the caller counts the card in the account's
    holdings (an import's batch, once, at its end). ``queued``: queue the card's stages, to send
    after the commit (``imported``: an import's, to run behind those queued by hand)."""
    upload = None
    if file is not None:
        upload = uploads.mark_taken(session, account_id=account_id, file_key=file.upload_id)
    card = new_card(account_id=account_id, file=file, created_at=created_at, **given)
    (written,) = store_cards(
        session,
        [card],
        account_id=account_id,
        pending=upload.declared_size if upload is not None else 0,
        max_cards=max_cards,
        counted=counted,
        queued=queued,
        imported=imported,
    )
    return written


def new_card(
    *,
    account_id: str,
    file: uploads.TakenFile | None = None,
    created_at: int | None = None,
    **given: Unpack[NewCard],
) -> Card:
    """The card ``add_card`` makes, checked and not yet stored (``store_cards`` stores it): what
    is refused for what it is given is refused here, without the database."""
    card_type, content, url = given.get("card_type"), given.get("content"), given.get("url")
    clean = clean_tags(given.get("tags", ()))
    if file is None and card_type in FILE_CARD_TYPES:
        raise FileRequired(
            f"{_a(card_type).capitalize()} card needs its file: upload it (POST /v1/uploads), "
            "then send its fileKey and fileEtag.",
            details=_field("fileKey", "is required for this cardType"),
        )
    content = "" if content is None else content
    check_content_size(content)
    card_type = card_type or infer_card_type(content, url)
    if card_type == "link" and url is None:
        url = url_in(content)
    now = now_ms() if created_at is None else created_at
    card = Card(
        id=new_id("crd"),
        account_id=account_id,
        type=card_type,
        content=content,
        notes=given.get("notes"),
        url=url,
        source=given.get("source"),
        file_name=given.get("file_name"),
        file_size=given.get("file_size"),
        mime_type=given.get("mime_type"),
        is_favorited=False,
        created_at=now,
        updated_at=now,
    )
    if file is not None:
        kind = file.file_type
        card.file_object, card.file_etag, card.file_name = file.object_key, file.etag, file.file_name
        card.file_size, card.mime_type, card.file_kind = file.size, kind.mime_type, kind.file_kind
        card.file_extension, card.file_language = filetypes.extension(file.file_name), kind.language
    replace_tags(card, "user", clean)
    return card


def store_cards(
    session: Session,
    cards: Sequence[Card],
    *,
    account_id: str,
    pending: int = 0,
    max_cards: int | None = None,
    counted: bool = True,
    queued: bool = False,
    imported: bool = False,
) -> list[Written]:
    """Store new cards of the account (``new_card``'s) together: one statement of each kind for
    all of them, in the lock order of cardvault.domain.db. ``pending``: the bytes of the
    uploads they took, which leave the account's pending bytes; CardLimitReached (nothing
    counted) when they would not all fit in ``max_cards``."""
    if any(card.tag_rows for card in cards):
        lock_tags(session, account_id=account_id)  # a running tag batch sees no card gain a tag
    session.add_all(cards)
    session.flush()
    index_cards(session, cards)
    after = counts.tally((card.pk, row.name_key, row.name) for card in cards for row in card.tag_rows)
    counts.apply(session, account_id=account_id, before=counts.NONE, after=after)
    # After the tag counters (the lock order in cardvault.domain.db): the uploads leave the
    # account's pending bytes and the cards' files join its stored ones.
    stored = sum(card.file_size or 0 for card in cards)
    quotas.count(session, account_id=account_id, pending=-pending, stored=stored)
    if counted:
        holdings.take(session, account_id=account_id, cards=len(cards), limit=max_cards)
    sent = processing.queue_new(session, cards, imported=imported) if queued else [()] * len(cards)
    return [Written(card, stages, imported) for card, stages in zip(cards, sent, strict=True)]


@dataclasses.dataclass(frozen=True)
class FileForCard:
    """An upload checked for a new card: the card's type and content it makes."""

    checked: uploads.CheckedUpload
    card_type: str
    content: str | None


def check_file(
    session: Session,
    store: BlobStore,
    *,
    account_id: str,
    file_key: str,
    file_etag: str | None,
    card_type: str | None,
    content: str | None,
) -> FileForCard:
    """Check an upload for a new card (see uploads.check), and the card's type against the
    file's: the card's type, and its content (a Markdown file's text)."""
    checked = uploads.check(session, store, account_id=account_id, file_key=file_key, file_etag=file_etag)
    kind = checked.file_type
    allowed = {kind.card_type} | ({"document"} if kind.file_kind == "markdown" else set())
    if card_type is not None and card_type not in allowed:
        raise TypeMismatch(
            f"The file is {kind.mime_type} (judged by its bytes), which makes {_a(kind.card_type)} card, "
            f"not {_a(card_type)} card.",
            details={"detected": kind.card_type},
        )
    card_type = card_type or kind.card_type
    if card_type == "text":  # Markdown: its text is the card's content
        if content:
            raise InvalidInput(
                "A Markdown file's text becomes the card's content: send the file or content, not both.",
                details=_field("content", "must not be sent with a Markdown file"),
            )
        content = uploads.read_text(store, checked)
        check_content_size(content)
    return FileForCard(checked=checked, card_type=card_type, content=content)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _field(name: str, message: str) -> dict[str, list[dict[str, str]]]:
    return {"fields": [{"location": "body", "field": name, "message": message}]}


def get_card(session: Session, *, account_id: str, card_id: str, for_update: bool = False) -> Card:
    """Return the account's card, or raise NotFound (also for another account's card).

    Writers pass ``for_update``: the row stays locked until their transaction ends, so two
    concurrent changes to one card apply one after the other (PostgreSQL; SQLite writers are
    serialised by BEGIN IMMEDIATE)."""
    return get_owned(session, Card, row_id=card_id, account_id=account_id, for_update=for_update)


def get_live_card(
    session: Session,
    *,
    account_id: str,
    card_id: str,
    types: tuple[str, ...],
    only: str,
    for_update: bool = False,
) -> Card:
    """Return the account's card when it is out of Trash and of one of ``types`` (CardInTrash,
    or TypeMismatch saying ``only`` which cards qualify)."""
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=for_update)
    if card.deleted_at is not None:
        raise CardInTrash("The card is in Trash; restore it first.")
    if card.type not in types:
        raise TypeMismatch(f"{only}; this card is {card.type}.")
    return card


def update_card(
    session: Session,
    *,
    account_id: str,
    card_id: str,
    content: str | None = None,
    notes: str | object | None = _UNSET,
    tags: Sequence[str] | None = None,
    url: str | None = None,
) -> Card:
    """Set the given fields; updatedAt moves only when a value changes."""
    return edit_card(
        session, account_id=account_id, card_id=card_id, content=content, notes=notes, tags=tags, url=url
    ).card


def edit_card(
    session: Session,
    *,
    account_id: str,
    card_id: str,
    content: str | None = None,
    notes: str | object | None = _UNSET,
    tags: Sequence[str] | None = None,
    url: str | None = None,
) -> Written:
    """Set the given fields; updatedAt moves only when a value changes. A link's new URL drops
    what its old page said and queues its stages again (a replaced image stays); a text or
    quote card's new content queues its ``ai`` stage again."""
    if content is not None:
        check_content_size(content)
    clean = clean_tags(tags) if tags is not None else None
    if clean is not None:
        lock_tags(session, account_id=account_id)  # before the card, as cardvault.domain.db says
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    before = (card.content, card.notes, card.url, card.tags)
    tags_before = counts.card_tally(card)
    if content is not None:
        card.content = content
    if notes is not _UNSET:
        card.notes = notes  # type: ignore[assignment]
    if url is not None:
        card.url = url
    if clean is not None:
        replace_tags(card, "user", clean)
    stages: tuple[str, ...] = ()
    if (card.content, card.notes, card.url, card.tags) != before:
        card.updated_at = max(now_ms(), card.updated_at)
        if card.url != before[2] and card.type == "link":
            if not card.thumbnail_overridden:  # the old page's image (the database dooms it)
                card.thumbnail_object = card.compact_object = card.placeholder_object = None
            links.forget_page(card)
            stages = processing.queue(session, card)
        elif card.content != before[0] and card.type in ("text", "quote"):
            stages = processing.queue(session, card, ["ai"])  # its summary and tags, anew
        if card.content != before[0]:
            place_again(session, card)
        session.flush()
        index_card(session, card)
        counts.apply(session, account_id=account_id, before=tags_before, after=counts.card_tally(card))
        held.recount(session, card)  # the old page's image counts no more
    return Written(card, stages)


def lock_cards(session: Session, *, account_id: str, card_ids: Sequence[str]) -> dict[str, Card]:
    """The account's cards of these ids (by id; another account's are not there), locked in
    pk order (the lock order in cardvault.domain.db), their tags loaded."""
    if not card_ids:
        return {}
    found = session.scalars(
        select(Card)
        .where(Card.account_id == account_id, Card.id.in_(sorted(set(card_ids))))
        .order_by(Card.pk)
        .with_for_update()
        .options(selectinload(Card.tag_rows))
    )
    return {card.id: card for card in found}


def store_tags(
    session: Session, *, account_id: str, cards: Sequence[Card], before: Mapping[int, counts.Tally]
) -> None:
    """Store the new tags of cards the caller holds (locked after the account's tag lock), as
    ``edit_card`` stores one card's, together: their updatedAt, their words in the index, the
    account's tag counts (``before``: each card's tally before, by pk)."""
    if not cards:
        return
    now = now_ms()
    for card in cards:
        card.updated_at = max(now, card.updated_at)
    session.flush()
    index_cards(session, cards)
    counts.apply(
        session,
        account_id=account_id,
        before=counts.combined(before[card.pk] for card in cards),
        after=counts.combined(counts.card_tally(card) for card in cards),
    )


def refresh(session: Session, *, account_id: str, card_id: str) -> Written:
    """Clear the card's AI summary, AI tags and transcript and queue its whole pipeline again
    (a replaced link image stays; a link's page is read again, its old fields kept until
    then)."""
    lock_tags(session, account_id=account_id)  # before the card: its AI tags go
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    ensure_not_in_trash(card)
    forget_ai(session, card)
    return Written(card, processing.queue(session, card))


def forget_ai(session: Session, card: Card) -> None:
    """Clear what the pipeline wrote from the card's text: its AI summary, AI tags, engine and
    transcript (the caller holds the account's tag lock and the card's row)."""
    written = (card.ai_summary, card.ai_transcript, card.ai_engine, card.transcript_source)
    if not card.ai_tags and all(value is None for value in written):
        return
    tags_before = counts.card_tally(card)
    card.ai_summary = card.ai_transcript = card.ai_engine = card.transcript_source = None
    replace_tags(card, "ai", [])
    card.updated_at = max(now_ms(), card.updated_at)
    session.flush()
    index_card(session, card)
    counts.apply(session, account_id=card.account_id, before=tags_before, after=counts.card_tally(card))


def set_ai_tags(session: Session, *, account_id: str, card_id: str, tags: Sequence[str]) -> Card:
    """Make the card's AI tags exactly these (cleaned), in this order."""
    clean = clean_tags(tags)
    lock_tags(session, account_id=account_id)  # before the card, as cardvault.domain.db says
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    before, names = counts.card_tally(card), card.ai_tags
    replace_tags(card, "ai", clean)
    if card.ai_tags != names:
        card.updated_at = max(now_ms(), card.updated_at)
    session.flush()
    counts.apply(session, account_id=account_id, before=before, after=counts.card_tally(card))
    return card


def ensure_not_in_trash(card: Card) -> None:
    """Refuse an operation on a card in Trash (done, archive; later replace-image, refresh)."""
    if card.deleted_at is not None:
        raise CardInTrash("The card is in Trash; restore it first.")


def set_archived(session: Session, *, account_id: str, card_id: str, is_archived: bool) -> Card:
    """Archive or unarchive the card; archiving again keeps the first archivedAt."""
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    ensure_not_in_trash(card)
    if is_archived and card.archived_at is None:
        card.archived_at = now_ms()
        card.updated_at = max(card.archived_at, card.updated_at)
    elif not is_archived and card.archived_at is not None:
        card.archived_at = None
        card.updated_at = max(now_ms(), card.updated_at)
    return card


def set_favorite(session: Session, *, account_id: str, card_id: str, is_favorited: bool) -> Card:
    """Mark or unmark the card as a favorite."""
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    if card.is_favorited != is_favorited:
        card.is_favorited = is_favorited
        card.updated_at = max(now_ms(), card.updated_at)
    return card


def mark_done(session: Session, *, account_id: str, card_id: str) -> Card:
    """Set a link card's completedAt once; later calls keep the first value."""
    card = get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    ensure_not_in_trash(card)
    if card.type != "link":
        raise TypeMismatch(f"Only link cards can be marked done; this card is a {card.type} card.")
    if card.completed_at is None:
        card.completed_at = now_ms()
        card.updated_at = max(card.completed_at, card.updated_at)
    return card
