"""The images and videos a page offers for previews (Open Graph), as ``linkPreviewMedia``
entries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cardvault.adapters.pages.values import absolute_url, clean_text


def preview_media(og: dict[str, list[str]], url: str) -> Iterator[dict[str, Any]]:
    """The images and videos the page offers for previews (Open Graph), in its order."""
    images = [absolute_url(u, url) for u in og.get("og:image:secure_url") or og.get("og:image", [])]
    image_types, widths, heights = (
        og.get("og:image:type", []),
        og.get("og:image:width", []),
        og.get("og:image:height", []),
    )
    poster = next((i for i in images if i), None)
    videos = [absolute_url(u, url) for u in og.get("og:video:secure_url") or og.get("og:video", [])]
    video_types = og.get("og:video:type", [])
    v_widths, v_heights = og.get("og:video:width", []), og.get("og:video:height", [])
    for index, video in enumerate(videos):
        if video:
            yield medium(
                "video",
                video,
                _at(video_types, index),
                width=_whole(_at(v_widths, index)),
                height=_whole(_at(v_heights, index)),
                posterUrl=poster,
                posterContentType=_at(image_types, 0) if poster else None,
                posterWidth=_whole(_at(widths, 0)) if poster else None,
                posterHeight=_whole(_at(heights, 0)) if poster else None,
            )
    for index, image in enumerate(images):
        if image:
            kind = _at(image_types, index)
            yield medium(
                "image", image, kind, width=_whole(_at(widths, index)), height=_whole(_at(heights, index))
            )


def medium(kind: str, url: str, content_type: str | None, **more: Any) -> dict[str, Any]:
    """A ``linkPreviewMedia`` entry: every field, null where not known."""
    return {
        "type": kind,
        "url": url,
        "contentType": content_type,
        "width": None,
        "height": None,
        "posterUrl": None,
        "posterContentType": None,
        "posterWidth": None,
        "posterHeight": None,
        **more,
    }


def _at(values: list[str], index: int) -> str | None:
    return clean_text(values[index]) if index < len(values) else None


def _whole(value: str | None) -> int | None:
    return (
        int(value) if value is not None and value.isascii() and value.isdigit() and len(value) < 7 else None
    )
