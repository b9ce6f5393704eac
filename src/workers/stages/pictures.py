"""The pictures stages make: images decoded in the decoder's child, and WebP pictures stored
under names of the attempt's own."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cardvault.adapters.images import ImageRefused, Renditions
from cardvault.domain.files import held
from cardvault.domain.models import Card
from cardvault.domain.processing import StageFailed
from cardvault.workers.broker import blob_store, decoder

_PICTURES = {  # a card's picture column, and its stored name's end
    "compact_object": "256.webp",
    "placeholder_object": "48.webp",
    "thumbnail_object": "1200.webp",
    "scrub_object": "scrub.webp",
    "screenshot_object": "screenshot.webp",
    "screenshot_compact_object": "screenshot-256.webp",
    "screenshot_placeholder_object": "screenshot-48.webp",
}


def decode(path: Path, *, large: bool) -> Renditions:
    """Renditions of the image at ``path``, made in the decoder's child process."""
    try:
        return decoder().renditions(path, large=large)
    except ImageRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.code == "DECODE_BUSY") from None


def store_pictures(card: Card, lease: str, pictures: Mapping[str, bytes | None]) -> dict[str, object]:
    """Store WebP pictures under names of this attempt's own (its lease): a new file never
    meets an old picture's cache, and what an outrun attempt stored (and dooms) is never what
    a later one recorded. Answers the card's columns for them, and their bytes (held.SIZES),
    which the account's stored bytes count once the card keeps them."""
    base = f"accounts/{card.account_id}/renditions/{card.id}/{lease}"
    fields: dict[str, object] = {}
    sizes: dict[str, int] = {}
    for column, data in pictures.items():
        if data is not None:
            key = f"{base}-{_PICTURES[column]}"
            blob_store().put(key, data, content_type="image/webp")
            fields[column], sizes[column] = key, len(data)
    fields[held.SIZES] = sizes
    return fields


def store_renditions(card: Card, made: Renditions, lease: str, *, large: bool) -> dict[str, object]:
    """A 256 px and a 48 px WebP, and with ``large`` the 1200 px one."""
    pictures = {"compact_object": made.compact, "placeholder_object": made.placeholder}
    return store_pictures(card, lease, {**pictures, **({"thumbnail_object": made.large} if large else {})})
