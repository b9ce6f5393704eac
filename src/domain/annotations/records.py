"""Creating, listing, changing and deleting annotations. Limits: 1,000 per card (counted on the
card as ``annotation_count``), a quote of at most 4,000 characters and a note of at most 8,000
(in the spec). A card in Trash keeps its annotations (lists of the account leave them out) and
refuses changes to them; its purge deletes them with it (the database cascades)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from cardvault.domain import changes
from cardvault.domain.annotations import anchoring, texts
from cardvault.domain.clock import now_ms
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import AnnotationLimitReached, CardInTrash, InvalidInput, NotFound, QuoteNotFound
from cardvault.domain.ids import new_id
from cardvault.domain.models import Annotation, Card, get_owned
from cardvault.domain.search.index import index_card

MAX_PER_CARD = 1000
MAX_QUOTE, MAX_NOTE = 4000, 8000  # characters (the spec's AnnotationQuote and AnnotationNote)
PALETTE = ("yellow", "green", "blue", "pink", "purple", "orange")
_UNSET = object()


@dataclasses.dataclass(frozen=True)
class AnnotationPage:
    annotations: Sequence[Annotation]
    next_cursor: str | None


def _live_card(session: Session, *, account_id: str, card_id: str) -> Card:
    card = get_owned(session, Card, row_id=card_id, account_id=account_id, for_update=True)
    if card.deleted_at is not None:
        raise CardInTrash("The card is in Trash; restore it first.")
    return card


def place(annotation: Annotation, found: texts.CardText | None) -> bool:
    """Place the annotation's quote in the card's text (``found``); answer whether it is placed.
    A text not known yet leaves it unplaced, not orphaned; a text that does not hold it
    orphans it."""
    if annotation.quote is None:
        return True
    anchor = None
    if found is not None and found.text is not None:
        anchor = anchoring.find(
            found.text,
            annotation.quote,
            prefix=annotation.prefix,
            suffix=annotation.suffix,
            near=annotation.start,
        )
    return settle(annotation, found, anchor)


def settle(annotation: Annotation, found: texts.CardText | None, anchor: anchoring.Anchor | None) -> bool:
    """Keep where the quote was found in ``found`` (``anchor``; None: not in it), as ``place``
    says."""
    annotation.source = annotation.start = annotation.end = None
    if found is None or found.text is None:
        annotation.orphaned = False
        return found is not None
    annotation.orphaned = anchor is None
    if anchor is not None:
        annotation.source, annotation.start, annotation.end = found.source, anchor.start, anchor.end
        annotation.prefix, annotation.suffix = anchoring.context(found.text, anchor)
    return anchor is not None


def create(
    session: Session,
    *,
    account_id: str,
    card_id: str,
    quote: str | None = None,
    prefix: str | None = None,
    suffix: str | None = None,
    note: str | None = None,
    color: str | None = None,
    at: int | None = None,
    strict: bool = True,
    indexed: bool = True,
) -> Annotation:
    """Annotate the card. A quote its known text does not hold raises QuoteNotFound (``strict``;
    an import keeps it orphaned instead); a card without a text of its own kind placed later
    keeps it unplaced. ``indexed``: write the card's words again (many at once: the caller
    does, once, after the last)."""
    if quote is None and note is None:
        raise InvalidInput(
            "An annotation needs a quote, a note or both.",
            details={"fields": [{"location": "body", "field": "quote", "message": "or note is required"}]},
        )
    card = _live_card(session, account_id=account_id, card_id=card_id)
    if card.annotation_count >= MAX_PER_CARD:
        raise AnnotationLimitReached(MAX_PER_CARD)
    now = at or now_ms()
    annotation = Annotation(
        id=new_id("ann"),
        account_id=account_id,
        card_pk=card.pk,
        card_id=card.id,
        quote=quote,
        prefix=prefix if quote is not None else None,
        suffix=suffix if quote is not None else None,
        note=note,
        color=color,
        orphaned=False,
        created_at=now,
        updated_at=now,
    )
    found = texts.text_of(session, card) if quote is not None else None
    if not place(annotation, found) and strict:
        raise QuoteNotFound(found.source if found else None)
    session.add(annotation)
    card.annotation_count += 1
    session.flush()
    if indexed:
        index_card(session, card)  # its quote and note are found as the card's notes are
    return annotation


def get(session: Session, *, account_id: str, annotation_id: str, for_update: bool = False) -> Annotation:
    """The account's annotation, or NotFound (another account's answers the same)."""
    query = select(Annotation).where(Annotation.id == annotation_id, Annotation.account_id == account_id)
    found = session.scalar(query.with_for_update() if for_update else query)
    if found is None:
        raise NotFound("Annotation not found.")
    return found


def _changeable(session: Session, *, account_id: str, annotation_id: str) -> tuple[Annotation, Card]:
    annotation = get(session, account_id=account_id, annotation_id=annotation_id)
    card = _live_card(session, account_id=account_id, card_id=annotation.card_id)
    return get(session, account_id=account_id, annotation_id=annotation_id, for_update=True), card


def update(
    session: Session,
    *,
    account_id: str,
    annotation_id: str,
    note: str | object | None = _UNSET,
    color: str | object | None = _UNSET,
) -> Annotation:
    """Set the note or the colour (None clears either)."""
    annotation, card = _changeable(session, account_id=account_id, annotation_id=annotation_id)
    values = {
        name: value
        for name, value in (("note", note), ("color", color))
        if value is not _UNSET and value != getattr(annotation, name)
    }
    if values:
        for name, value in values.items():
            setattr(annotation, name, value)
        annotation.updated_at = max(now_ms(), annotation.updated_at)
        session.flush()
        index_card(session, card)
    return annotation


def delete(session: Session, *, account_id: str, annotation_id: str) -> None:
    """Delete the annotation for good."""
    annotation, card = _changeable(session, account_id=account_id, annotation_id=annotation_id)
    session.delete(annotation)
    card.annotation_count = max(0, card.annotation_count - 1)
    session.flush()
    index_card(session, card)


def forget_cards(session: Session, card_pks: Sequence[int]) -> None:
    """Before cards are deleted for good (the database deletes their annotations with them):
    note each annotation's tombstone for the changes feed."""
    if not card_pks:
        return
    rows = session.execute(
        select(Annotation.account_id, Annotation.id).where(Annotation.card_pk.in_(card_pks))
    ).all()
    by_account: dict[str, list[str]] = {}
    for account_id, annotation_id in rows:
        by_account.setdefault(account_id, []).append(annotation_id)
    for account_id, ids in by_account.items():
        changes.note(session, account_id=account_id, kind="annotation", ids=ids, action="delete")


# What a listing shows of each annotation, read as plain rows (by column name): a card's
# 1,000 annotations load without building 1,000 ORM objects.
_SHOWN = (
    Annotation.pk,
    Annotation.card_pk,
    Annotation.id,
    Annotation.card_id,
    Annotation.quote,
    Annotation.prefix,
    Annotation.suffix,
    Annotation.source,
    Annotation.start,
    Annotation.end,
    Annotation.orphaned,
    Annotation.note,
    Annotation.color,
    Annotation.created_at,
    Annotation.updated_at,
)
# A card's text order: placed ones by where they start, then the rest oldest first.
_TEXT_ORDER = (
    Annotation.start.is_(None),
    Annotation.start,
    Annotation.end,
    Annotation.created_at,
    Annotation.pk,
)
Listed = Any  # an annotation as listed: a Row of its shown columns, read by name as an Annotation is


def of_card(session: Session, *, account_id: str, card_id: str) -> Sequence[Listed]:
    """The card's annotations in text order: placed ones by where they start, then the rest
    oldest first."""
    # One statement: the card (its key alone, for its row holds texts of up to 512 KiB the
    # list does not show) joined to its annotations, so that a card without any still answers
    # one row, and a missing one none; only the columns an annotation shows come back.
    rows = session.execute(
        select(Card.pk.label("of_card"), *_SHOWN[2:])
        .outerjoin(Annotation, Annotation.card_pk == Card.pk)
        .where(Card.id == card_id, Card.account_id == account_id)
        .order_by(*_TEXT_ORDER)
    ).all()
    if not rows:
        raise NotFound("Card not found.")
    return [] if rows[0].id is None else rows


def of_cards(session: Session, *, card_pks: Sequence[int]) -> dict[int, list[Listed]]:
    """Each card's annotations in text order, by card pk."""
    if not card_pks:
        return {}
    rows = session.execute(
        select(*_SHOWN).where(Annotation.card_pk.in_(card_pks)).order_by(Annotation.card_pk, *_TEXT_ORDER)
    )
    found: dict[int, list[Listed]] = {}
    for row in rows:
        found.setdefault(row.card_pk, []).append(row)
    return found


def page(
    session: Session,
    *,
    account_id: str,
    secret: str,
    limit: int,
    cursor: str | None = None,
    card_id: str | None = None,
    color: str | None = None,
) -> AnnotationPage:
    """The account's annotations of cards outside Trash, newest first, ``limit`` at a time."""
    scope = f"annotations:{account_id}:{card_id or ''}:{color or ''}"
    query = (
        select(Annotation)
        .join(Card, Card.pk == Annotation.card_pk)
        .where(Annotation.account_id == account_id, Card.deleted_at.is_(None))
    )
    if card_id is not None:
        query = query.where(Annotation.card_id == card_id)
    if color is not None:
        query = query.where(Annotation.color == color)
    if cursor is not None:
        created, pk = decode_cursor(secret, cursor, scope=scope, size=2)
        if not isinstance(created, int) or not isinstance(pk, int):
            raise InvalidInput("The cursor is not valid.")
        query = query.where(
            or_(Annotation.created_at < created, and_(Annotation.created_at == created, Annotation.pk < pk))
        )
    rows = session.scalars(
        query.order_by(Annotation.created_at.desc(), Annotation.pk.desc()).limit(limit + 1)
    ).all()
    shown = rows[:limit]
    following = None
    if len(rows) > limit:
        last = shown[-1]
        following = encode_cursor(secret, scope=scope, position=[last.created_at, last.pk])
    return AnnotationPage(shown, following)


class Imported(Protocol):
    quote: str
    note: str | None
    color: str | None


def keep_imported(session: Session, card: Card, highlights: Sequence[Imported]) -> None:
    """An import's highlights as the card's annotations, placed where its text holds them and
    unplaced while the text is not known (a page not read yet): a quote its known text does
    not hold is kept orphaned, never refused. A highlight the card has already is not taken
    again (an entry merged into it); past the card's limit the rest are left out."""
    if not highlights:
        return
    had = set(session.scalars(select(Annotation.quote).where(Annotation.card_pk == card.pk)))
    for highlight in highlights:
        quote, note = highlight.quote[:MAX_QUOTE], (highlight.note or "")[:MAX_NOTE] or None
        if quote in had or card.annotation_count >= MAX_PER_CARD:
            continue
        had.add(quote)
        color = highlight.color if highlight.color in PALETTE else None
        create(
            session,
            account_id=card.account_id,
            card_id=card.id,
            quote=quote,
            note=note,
            color=color,
            strict=False,
            indexed=False,
        )
    session.flush()
    index_card(session, card)


def restore_archived(session: Session, card: Card, found: Sequence[object]) -> None:
    """An export archive's annotations of the card (archive.annotation_record's), placed again
    in its text; where the text is not restored (a link's page, read again by its stage) each
    keeps the place the archive gives. An entry that is not one is left out."""
    for entry in found[:MAX_PER_CARD]:
        kept = _archived(entry)
        if kept is None:
            continue
        made = create(
            session,
            account_id=card.account_id,
            card_id=card.id,
            strict=False,
            indexed=False,
            **kept["fields"],
        )
        position = kept["position"]
        if made.quote is not None and made.start is None and not made.orphaned and position is not None:
            made.source, made.start, made.end = position
        made.updated_at = max(made.created_at, kept["updated_at"])
    if found:
        session.flush()
        index_card(session, card)


def _archived(entry: object) -> dict[str, Any] | None:
    """What an archived annotation holds, checked as the spec's AnnotationCreate would; None
    when it is not one."""
    if not isinstance(entry, dict):
        return None
    quote, note, color = entry.get("quote"), entry.get("note"), entry.get("color")
    prefix, suffix, at = entry.get("prefix"), entry.get("suffix"), entry.get("createdAt")
    texts_ok = all(
        value is None or (isinstance(value, str) and 0 < len(value) <= limit and "\x00" not in value)
        for value, limit in ((quote, MAX_QUOTE), (note, MAX_NOTE))
    )
    context_ok = all(
        value is None or (isinstance(value, str) and len(value) <= 32) for value in (prefix, suffix)
    )
    if not (texts_ok and context_ok and (quote or note)) or (color is not None and color not in PALETTE):
        return None
    if not (isinstance(at, int) and not isinstance(at, bool) and 0 < at < 2**53):
        return None
    found = entry.get("position")
    position = None
    if isinstance(found, dict) and found.get("source") in texts.SOURCES.values():
        start, end = found.get("start"), found.get("end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < 2**31:
            position = (found["source"], start, end)
    updated = entry.get("updatedAt")
    fields = {"quote": quote, "prefix": prefix, "suffix": suffix, "note": note, "color": color, "at": at}
    return {
        "fields": fields,
        "position": position,
        "updated_at": updated if isinstance(updated, int) and not isinstance(updated, bool) else at,
    }
