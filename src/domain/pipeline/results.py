"""What a stage's attempt answers and how the common results are kept: card fields, written
into the card by most stages' ``apply`` (``set_fields``), and WebP pictures stored under names of
the attempt's own, with their bytes under SIZES (counted in the account's stored bytes once the
card keeps them: cardvault.workers.pipeline)."""

from __future__ import annotations

from collections.abc import Mapping

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.images import Renditions
from cardvault.domain.models import Card

SIZES = "held_sizes"  # the key of a stage's result naming its new objects' bytes by column
_PICTURES = {  # a card's picture column, and its stored name's end
    "compact_object": "256.webp",
    "placeholder_object": "48.webp",
    "thumbnail_object": "1200.webp",
    "scrub_object": "scrub.webp",
    "screenshot_object": "screenshot.webp",
    "screenshot_compact_object": "screenshot-256.webp",
    "screenshot_placeholder_object": "screenshot-48.webp",
}


def set_fields(card: Card, fields: dict[str, object]) -> None:
    """Write a result's card fields into the card: the ``apply`` of most stages."""
    for name, value in fields.items():
        setattr(card, name, value)


def store_pictures(
    blobs: BlobStore, card: Card, lease: str, pictures: Mapping[str, bytes | None]
) -> dict[str, object]:
    """Store WebP pictures under names of this attempt's own (its lease): a new file never
    meets an old picture's cache, and what an outrun attempt stored (and dooms) is never what
    a later one recorded. Answers the card's columns for them, and their bytes (SIZES), which
    the account's stored bytes count once the card keeps them."""
    base = f"accounts/{card.account_id}/renditions/{card.id}/{lease}"
    fields: dict[str, object] = {}
    sizes: dict[str, int] = {}
    for column, data in pictures.items():
        if data is not None:
            key = f"{base}-{_PICTURES[column]}"
            blobs.put(key, data, content_type="image/webp")
            fields[column], sizes[column] = key, len(data)
    fields[SIZES] = sizes
    return fields


def store_renditions(
    blobs: BlobStore, card: Card, made: Renditions, lease: str, *, large: bool
) -> dict[str, object]:
    """A 256 px and a 48 px WebP, and with ``large`` the 1200 px one."""
    pictures = {"compact_object": made.compact, "placeholder_object": made.placeholder}
    return store_pictures(
        blobs, card, lease, {**pictures, **({"thumbnail_object": made.large} if large else {})}
    )
