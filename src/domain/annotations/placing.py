"""Placing a card's annotations again when its text changes (a text card edited, a page read
or captured again, a document decoded, a transcript written): each quote is looked for near
where it was, by its prefix and suffix (in text order, so that the quotes an edit moved by one
amount are found where that amount puts them, without a search); one the new text does not hold
is kept, orphaned."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.annotations import anchoring, texts
from cardvault.domain.annotations.records import settle
from cardvault.domain.clock import now_ms
from cardvault.domain.models import Annotation, Card


def place_again(session: Session, card: Card) -> int:
    """Place the card's quoted annotations in its text as it is now; return how many moved,
    were placed or were orphaned (each a change of the feed)."""
    if card.annotation_count == 0:
        return 0
    quoted = session.scalars(
        select(Annotation)
        .where(Annotation.card_pk == card.pk, Annotation.quote.is_not(None))
        .order_by(Annotation.pk)
        .with_for_update()
    ).all()
    if not quoted:
        return 0
    found = texts.text_of(session, card)
    if found is not None and found.text is None:
        return 0  # a text not known (any more) leaves each where it was
    # Where each was, in text order (the unplaced after, oldest first).
    quoted = sorted(quoted, key=lambda a: (a.start is None, a.start or 0, a.pk))
    anchors: list[anchoring.Anchor | None] = [None] * len(quoted)
    if found is not None and found.text is not None:
        anchors = anchoring.place_all(
            found.text, [anchoring.Quoted(a.quote or "", a.prefix, a.suffix, a.start) for a in quoted]
        )
    moved = []
    now = now_ms()
    for annotation, anchor in zip(quoted, anchors, strict=True):
        before = (annotation.source, annotation.start, annotation.end, annotation.orphaned)
        settle(annotation, found, anchor)
        if (annotation.source, annotation.start, annotation.end, annotation.orphaned) != before:
            annotation.updated_at = max(now, annotation.updated_at)
            moved.append(annotation.id)
    return len(moved)  # each recorded in the changes feed by its flush
