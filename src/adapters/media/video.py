"""A video's duration, coded size, poster and scrub strip (in the decoder's child): a poster
frame at a tenth of the duration (as 1200, 256 and 48 px WebP) and a scrub strip: up to
SCRUB_FRAMES frames (one a second for shorter videos) evenly spaced, each the key frame at or
before its time, SCRUB_WIDTH px wide, laid out left to right and top to bottom in rows of
SCRUB_COLUMNS, one WebP."""

from __future__ import annotations

import io
from typing import Any

from cardvault.adapters.media import MediaRefused
from cardvault.adapters.media.containers import open_container, stated_seconds
from cardvault.adapters.renditions import three_sizes

SCRUB_FRAMES = 40
SCRUB_WIDTH = 160
SCRUB_COLUMNS = 10
MAX_VIDEO_PIXELS = 8192 * 8192
DECODE_THREADS = 2  # FFmpeg's threads a stream (their stacks count against the child's memory)
POSTER_AT = 0.1


def video(path: str, mime_type: str) -> tuple[dict[str, Any], list[bytes]]:
    """A video's duration, size, poster (three sizes) and scrub strip."""
    import av

    with open_container(path, mime_type) as container:
        if not container.streams.video:
            raise MediaRefused("MEDIA_UNREADABLE", "The file has no video.")
        stream = container.streams.video[0]
        if stream.codec_context is None:
            raise MediaRefused("MEDIA_UNREADABLE", "The video's codec is unknown.")
        width, height = stream.codec_context.width, stream.codec_context.height
        if not width or not height:
            raise MediaRefused("MEDIA_UNREADABLE", "The video's frame size is unknown.")
        if width * height > MAX_VIDEO_PIXELS:
            raise MediaRefused("MEDIA_TOO_LARGE", f"The video is {width} x {height}; at most 8192 x 8192.")
        seconds = stated_seconds(container, stream)
        stream.codec_context.thread_count = DECODE_THREADS
        size = _tile_size(width, height)
        try:
            poster = _frame_at(container, stream, seconds * POSTER_AT, key_only=False)
            tiles = _scrub_frames(container, stream, seconds, size)
        except av.FFmpegError as exc:
            raise MediaRefused("MEDIA_UNREADABLE", f"The video cannot be decoded: {exc}") from None
    if poster is None:
        raise MediaRefused("MEDIA_UNREADABLE", "The video has no frame that decodes.")
    sizes = three_sizes(poster)
    sprite, scrub = _sprite(tiles or [poster.resize(size)], size)
    facts = {"durationMs": round(seconds * 1000), "width": width, "height": height, "scrub": scrub}
    return facts, [*sizes, sprite]


def _frame_at(
    container: Any, stream: Any, at: float, *, key_only: bool, size: tuple[int, int] | None = None
) -> Any:
    """The picture of the first frame decoded at or after ``at`` seconds (with ``key_only``,
    the key frame at or before it), scaled to ``size`` as it is converted (a tile never
    holds a full frame)."""
    stream.codec_context.skip_frame = "NONKEY" if key_only else "DEFAULT"
    container.seek(int(max(at, 0) / stream.time_base), stream=stream, backward=True, any_frame=False)
    found = None
    for frame in container.decode(stream):
        found = frame
        if key_only or frame.time is None or frame.time >= at - 0.001:
            break
    if found is None:
        return None
    if size is not None:
        return found.reformat(width=size[0], height=size[1], format="rgb24").to_image()
    return found.to_image()


def _tile_size(width: int, height: int) -> tuple[int, int]:
    return SCRUB_WIDTH, max(2, min(SCRUB_WIDTH * 4, round(SCRUB_WIDTH * height / width / 2) * 2))


def _scrub_frames(container: Any, stream: Any, seconds: float, size: tuple[int, int]) -> list[Any]:
    """A tile a stretch; a stretch whose frame cannot be had repeats the tile before it (so
    tile ``i`` always stands for stretch ``i``)."""
    count = max(1, min(SCRUB_FRAMES, int(seconds)))
    tiles: list[Any] = []
    for index in range(count):
        picture = _frame_at(container, stream, seconds * (index + 0.5) / count, key_only=True, size=size)
        if picture is None and tiles:
            picture = tiles[-1]
        if picture is not None:
            tiles.append(picture)
    return tiles


def _sprite(tiles: list[Any], size: tuple[int, int]) -> tuple[bytes, dict[str, int]]:
    from PIL import Image

    tile_height = size[1]
    columns = min(SCRUB_COLUMNS, len(tiles))
    rows = -(-len(tiles) // columns)
    sheet = Image.new("RGB", (columns * SCRUB_WIDTH, rows * tile_height))
    for index, tile in enumerate(tiles):
        place = (index % columns * SCRUB_WIDTH, index // columns * tile_height)
        sheet.paste(tile.convert("RGB").resize((SCRUB_WIDTH, tile_height)), place)
    out = io.BytesIO()
    sheet.save(out, "WEBP", quality=70, method=4)
    layout = {"frameWidth": SCRUB_WIDTH, "frameHeight": tile_height, "frames": len(tiles), "columns": columns}
    return out.getvalue(), layout
