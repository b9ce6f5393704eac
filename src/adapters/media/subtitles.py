"""Text tracks (in the decoder's child): a video's subtitle track, and a caption file's cues
(WebVTT, SubRip), as text one cue a line."""

from __future__ import annotations

import re
from typing import Any

from cardvault.adapters.media import MediaRefused
from cardvault.adapters.media.containers import OPTIONS, open_container

TRANSCRIPT_CHARS = 100_000  # of a transcript, the most kept
_ASS_OVERRIDE = re.compile(r"\{[^{}]{0,500}\}")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_OVERRIDE_TAIL = re.compile(r"\\[a-z]{1,8}\d{0,4}\}")  # what is left of "{\an8}" in a WebVTT cue


def subtitles(path: str, mime_type: str) -> dict[str, Any]:
    """The text of the file's subtitle track (English first, else the first text track), one
    cue a line, a cue repeated at once kept once; ``text`` None when it has none."""
    with open_container(path, mime_type) as container:
        tracks = [
            t
            for t in container.streams.subtitles
            if t.codec_context is not None and t.codec_context.name not in _BITMAP_SUBTITLES
        ]
        if not tracks:
            return {"text": None, "language": None}
        track = next((t for t in tracks if _language(t) in ("eng", "en")), tracks[0])
        text, _ = _track_text(container, track)
    return {"text": text, "language": _language(track)}


CAPTION_FORMATS = {"vtt": "webvtt", "srt": "srt"}  # a caption file's format, and its demuxer


def captions(path: str, caption_format: str) -> dict[str, Any]:
    """A caption file's text as ``subtitles`` gives a track's, and how many cues have text."""
    import av

    try:
        container = av.open(path, format=CAPTION_FORMATS[caption_format], options=OPTIONS)
    except (av.FFmpegError, KeyError, ValueError) as exc:
        raise MediaRefused("CAPTIONS_UNREADABLE", f"The caption file cannot be read: {exc}") from None
    with container:
        if not container.streams.subtitles:
            raise MediaRefused("CAPTIONS_UNREADABLE", "The caption file has no cues.")
        text, cues = _track_text(
            container,
            container.streams.subtitles[0],
            code="CAPTIONS_UNREADABLE",
            what="Its cues",
            count_all=True,
        )
    return {"text": text, "cues": cues}


def _track_text(
    container: Any,
    track: Any,
    code: str = "MEDIA_UNREADABLE",
    what: str = "The subtitles",
    count_all: bool = False,
) -> tuple[str | None, int]:
    """A text track's cues, one a line (a cue repeated at once kept once), to TRANSCRIPT_CHARS;
    and how many cues have text (with ``count_all``, in the whole track, else in what was
    read)."""
    import av

    lines: list[str] = []
    size = cues = 0
    try:
        for packet in container.demux(track):
            for cue in packet.decode():
                line = _cue_text(cue)
                cues += bool(line)
                if line and size < TRANSCRIPT_CHARS and (not lines or lines[-1] != line):
                    lines.append(line)
                    size += len(line) + 1
            if size >= TRANSCRIPT_CHARS and not count_all:
                break
    except av.FFmpegError as exc:
        raise MediaRefused(code, f"{what} cannot be read: {exc}") from None
    return "\n".join(lines)[:TRANSCRIPT_CHARS].strip() or None, cues


_BITMAP_SUBTITLES = ("dvd_subtitle", "hdmv_pgs_subtitle", "dvb_subtitle", "xsub")


def _language(track: Any) -> str | None:
    value = track.metadata.get("language")
    return str(value).lower() if value and value != "und" else None


def _cue_text(cue: Any) -> str:
    raw = getattr(cue, "dialogue", None) or getattr(cue, "text", None) or b""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
    # FFmpeg writes a WebVTT cue's backslash as an ASS escape with a word joiner after it.
    text = _CONTROLS.sub("", text.replace("\u2060", "")).replace("\\\\", "\\")
    text = _OVERRIDE_TAIL.sub("", _ASS_OVERRIDE.sub("", text))
    text = text.replace("\\N", " ").replace("\\n", " ").replace("\\h", " ")
    return " ".join(text.split())
