"""Audio and video files opened with PyAV: every container with the format its bytes showed
and with the ``file`` protocol alone, so a playlist or reference inside a file can never make a
network request; and the length a stream's header states."""

from __future__ import annotations

import math
from typing import Any

from cardvault.adapters.media import MediaRefused

MAX_SECONDS = 7 * 24 * 3600  # a duration a header states beyond this is not believed

# The demuxer for each sniffed type (cardvault.domain.files.filetypes): never FFmpeg's own guess.
FORMATS = {
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "audio/mp4": "mp4",
    "video/webm": "matroska",
    "video/x-matroska": "matroska",
    "audio/mpeg": "mp3",
    "audio/ogg": "ogg",
    "audio/flac": "flac",
    "audio/wav": "wav",
}
OPTIONS = {"protocol_whitelist": "file"}


def open_container(path: str, mime_type: str) -> Any:
    """Open the file with the demuxer of its sniffed type; MediaRefused when it cannot be read."""
    import av

    try:
        return av.open(path, format=FORMATS[mime_type], options=OPTIONS, metadata_errors="replace")
    except (av.FFmpegError, KeyError, ValueError) as exc:
        raise MediaRefused("MEDIA_UNREADABLE", f"The file cannot be read: {exc}") from None


def stated_seconds(container: Any, stream: Any) -> float:
    """The stream's length in seconds as its header says (0 when it says nothing sensible)."""
    if stream.duration is not None and stream.time_base is not None:
        seconds = float(stream.duration * stream.time_base)
    else:
        seconds = float(container.duration or 0) / 1_000_000
    return seconds if math.isfinite(seconds) and 0 < seconds < MAX_SECONDS else 0.0
