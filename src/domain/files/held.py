"""What a card keeps in storage beyond its own file: its caption file, its image and every
rendition the pipeline made (256 px, 48 px, 1200 px, a video's scrub strip), its capture's
screenshot with its renditions, archive and reader view. Each object's bytes are kept by its
column in ``held_sizes`` and their sum in ``held_bytes``, which the account's stored bytes count
(cardvault.domain.files.quotas): every write that sets, replaces or drops one of these columns
recounts the card in its own transaction, and deleting the card frees them with its file."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from cardvault.domain.files import quotas
from cardvault.domain.models import Card

HELD_COLUMNS = (
    "compact_object",
    "placeholder_object",
    "thumbnail_object",
    "scrub_object",
    "captions_object",
    "screenshot_object",
    "screenshot_compact_object",
    "screenshot_placeholder_object",
    "archive_object",
    "reader_object",
)
SIZES = "held_sizes"  # the key of a stage's result naming its new objects' bytes by column


def recount(
    session: Session,
    card: Card,
    sizes: Mapping[str, int] | None = None,
    *,
    pending: int = 0,
    quota: quotas.Quotas | None = None,
) -> None:
    """Count the card's objects again after a write set or dropped some: ``sizes`` gives the
    bytes of those it set (by column), one dropped counts no more, the rest as before. Moves
    the account's stored bytes by the difference (and its pending ones by ``pending``); with
    ``quota``, bytes added past it raise QuotaExceeded, nothing counted. The account's row is
    the last lock of a change (cardvault.domain.db): call this at its end."""
    sizes = sizes or {}
    before = dict(card.held_sizes or {})
    after = {
        column: int(sizes.get(column, before.get(column, 0)))
        for column in HELD_COLUMNS
        if getattr(card, column) is not None
    }
    added = sum(after.values()) - card.held_bytes
    if quota is not None and added > 0:
        quotas.take(session, account_id=card.account_id, pending=pending, stored=added, quotas=quota)
    else:
        quotas.count(session, account_id=card.account_id, pending=pending, stored=added)
    if after != before:
        card.held_sizes = after or None
    card.held_bytes += added
