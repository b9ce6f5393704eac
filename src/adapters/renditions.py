"""The WebP renditions every picture is kept as: their sizes (LARGE, COMPACT, PLACEHOLDER) and
how one is written; images and media both make them."""

from __future__ import annotations

import io
from typing import Any

COMPACT, PLACEHOLDER, LARGE = 256, 48, 1200


def webp(image: Any, size: int, quality: int) -> tuple[Any, bytes]:
    image.thumbnail((size, size))
    out = io.BytesIO()
    image.save(out, "WEBP", quality=quality, method=4)
    return image, out.getvalue()


def three_sizes(picture: Any) -> list[bytes]:
    """A picture as 1200, 256 and 48 px WebP."""
    frame = picture.convert("RGB")
    large = webp(frame.copy(), LARGE, 85)[1]
    compact_image, compact = webp(frame, COMPACT, 80)
    return [large, compact, webp(compact_image.copy(), PLACEHOLDER, 50)[1]]
