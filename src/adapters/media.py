"""Audio, video and documents read where they cannot hurt: these functions run in the decoder's
child process (cardvault.adapters.images.Decoder), which has a memory and CPU limit, and answer
JSON facts and image bytes. The caller passes the type sniffed from the file's bytes; nothing
here trusts a name or a declared type.

- audio: the duration and a waveform, ``detail`` (WAVEFORM_DETAIL buckets) and ``grid``
  (WAVEFORM_GRID buckets): each bucket the loudest sample of any channel in its stretch of
  time, at the file's own rate, as a fraction of the loudest sample of the file (0 to 1, 3
  decimals; all 0 for silence). Up to
  FULL_DECODE_SECONDS every sample counts; a longer file is sampled, each bucket the loudest of
  the first SAMPLED_SECONDS at its start (its cost no longer grows with the length);
- video: the duration, the coded size, a poster frame at a tenth of the duration (as 1200,
  256 and 48 px WebP) and a scrub strip: up to SCRUB_FRAMES frames (one a second for shorter
  videos) evenly spaced, each the key frame at or before its time, SCRUB_WIDTH px wide, laid
  out left to right and top to bottom in rows of SCRUB_COLUMNS, one WebP;
- documents: a PDF's page count, its first page (as 1200, 256 and 48 px WebP) and its text; an
  office file's counts (pages, words, slides, sheets: as the file states them, or counted from
  its parts) and its text; an archive's entry, file and folder counts and declared size, from its
  index alone (a ZIP declaring more than MAX_ENTRIES entries: its declared count alone); a text
  or source file's excerpt and line count. Nothing is extracted to disk, and every part of a ZIP
  is read at most up to a limit (and all of them to another), so a ZIP bomb costs its limit.

Every container is opened with the format its bytes showed and with the ``file`` protocol
alone, so a playlist or reference inside a file can never make a network request."""

from __future__ import annotations

import io
import math
import re
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

WAVEFORM_DETAIL = 1000
WAVEFORM_GRID = 64
WAVEFORM_RATE = 8000  # the rate assumed where a file states none
FULL_DECODE_SECONDS = 20 * 60
SAMPLED_SECONDS = 0.1  # of a longer file, the stretch read at the start of each bucket
SCRUB_FRAMES = 40
SCRUB_WIDTH = 160
SCRUB_COLUMNS = 10
MAX_VIDEO_PIXELS = 8192 * 8192
MAX_SECONDS = 7 * 24 * 3600  # a duration a header states beyond this is not believed
DECODE_THREADS = 2  # FFmpeg's threads a stream (their stacks count against the child's memory)
POSTER_AT = 0.1
TEXT_KEEP = 20_000  # characters of a document's text kept (the AI stage's input)
TEXT_PAGES = 50  # of a PDF, the pages whose text is read
EXCERPT_CHARS = 2_000
PART_BYTES = 8 * 1024 * 1024  # of one part of an office file, the most read (decompressed)
OFFICE_BYTES = 32 * 1024 * 1024  # of all its parts together
OFFICE_PARTS = 200  # of its slide parts, the most read
MAX_ENTRIES = 100_000  # of an archive's index, the most entries counted
TEXT_BYTES = 10 * 1000 * 1000

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
_OPTIONS = {"protocol_whitelist": "file"}


class MediaRefused(Exception):
    """The file cannot be read: ``code`` is stable (MEDIA_UNREADABLE, MEDIA_TOO_LARGE,
    DOCUMENT_UNREADABLE)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def analyse(path: str, *, file_kind: str, mime_type: str) -> tuple[dict[str, Any], list[bytes]]:
    """Facts of the file and its pictures (see the module's docstring), by its kind."""
    if file_kind == "audio":
        return audio(path, mime_type), []
    if file_kind == "video":
        return video(path, mime_type)
    if file_kind == "pdf":
        return pdf(path)
    if file_kind == "office":
        return office(path, mime_type), []
    if file_kind == "archive":
        return archive(path, mime_type), []
    return text_file(path), []


# -- audio and video ---------------------------------------------------------------------------


def _open(path: str, mime_type: str) -> Any:
    import av

    try:
        return av.open(path, format=FORMATS[mime_type], options=_OPTIONS, metadata_errors="replace")
    except (av.FFmpegError, KeyError, ValueError) as exc:
        raise MediaRefused("MEDIA_UNREADABLE", f"The file cannot be read: {exc}") from None


def _duration(container: Any, stream: Any) -> float:
    """The stream's length in seconds as its header says (0 when it says nothing sensible)."""
    if stream.duration is not None and stream.time_base is not None:
        seconds = float(stream.duration * stream.time_base)
    else:
        seconds = float(container.duration or 0) / 1_000_000
    return seconds if math.isfinite(seconds) and 0 < seconds < MAX_SECONDS else 0.0


def audio(path: str, mime_type: str) -> dict[str, Any]:
    """An audio file's duration and waveform."""
    import av

    with _open(path, mime_type) as container:
        if not container.streams.audio or container.streams.audio[0].codec_context is None:
            raise MediaRefused("MEDIA_UNREADABLE", "The file has no audio that can be decoded.")
        stream = container.streams.audio[0]
        seconds = _duration(container, stream)
        try:
            if seconds <= FULL_DECODE_SECONDS:
                peaks = _all_peaks(container, stream)
            else:
                peaks = _sampled_peaks(container, stream, seconds)
        except av.FFmpegError as exc:
            raise MediaRefused("MEDIA_UNREADABLE", f"The audio cannot be decoded: {exc}") from None
    return {"durationMs": round(seconds * 1000), "waveform": waveform(peaks)}


def _mono(frame: Any, resampler: Any) -> Any:
    """The loudest channel's magnitude of each sample (no downmix: opposite channels would
    cancel), as finite floats, at the file's own rate (no resampling: it would drop the highs)."""
    import numpy as np

    chunks = [np.abs(f.to_ndarray()).max(axis=0) for f in resampler.resample(frame)]
    samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
    return np.nan_to_num(samples, nan=0.0, posinf=1.0, neginf=1.0).clip(0.0, 1.0)


def _resampler() -> Any:
    import av

    return av.AudioResampler(format="fltp")  # planar floats, the file's own layout and rate


def _all_peaks(container: Any, stream: Any) -> Any:
    """The loudest sample of every 10 ms, from every sample."""
    import numpy as np

    resampler, blocks, carry = _resampler(), [], np.zeros(0, dtype=np.float32)
    step = max(1, (stream.codec_context.sample_rate or WAVEFORM_RATE) // 100)
    decoded = 0.0
    for frame in container.decode(stream):
        decoded += frame.samples / (frame.sample_rate or WAVEFORM_RATE)
        if decoded > FULL_DECODE_SECONDS * 2:  # the header understated the length
            break
        samples = np.concatenate((carry, _mono(frame, resampler)))
        whole = len(samples) // step * step
        if whole:
            blocks.append(samples[:whole].reshape(-1, step).max(axis=1))
        carry = samples[whole:]
    carry = np.concatenate((carry, _mono(None, resampler)))  # what the resampler held back
    if len(carry):
        blocks.append(np.array([carry.max()], dtype=np.float32))
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)


def _sampled_peaks(container: Any, stream: Any, seconds: float) -> Any:
    """The loudest sample of the frame at the start of each bucket."""
    import numpy as np

    peaks = np.zeros(WAVEFORM_DETAIL, dtype=np.float32)
    for bucket in range(WAVEFORM_DETAIL):
        at = seconds * bucket / WAVEFORM_DETAIL
        container.seek(int(at / stream.time_base), stream=stream, backward=True, any_frame=False)
        resampler, heard = _resampler(), 0.0
        for frame in container.decode(stream):
            # Some decoders (MP3's) answer silence for the first frame after a seek: a stretch
            # of SAMPLED_SECONDS is read, and the resampler (which holds samples back) flushed.
            samples = _mono(frame, resampler)
            peaks[bucket] = max(peaks[bucket], float(samples.max()) if len(samples) else 0.0)
            heard += frame.samples / (frame.sample_rate or WAVEFORM_RATE)
            if heard >= SAMPLED_SECONDS:
                break
        flushed = _mono(None, resampler)
        peaks[bucket] = max(peaks[bucket], float(flushed.max()) if len(flushed) else 0.0)
    return peaks


def waveform(peaks: Any) -> dict[str, list[float]]:
    """``detail`` and ``grid`` from a run of peaks, as fractions of the loudest."""
    import numpy as np

    peaks = np.asarray(peaks, dtype=np.float32)
    if len(peaks) == 0:
        return {"detail": [], "grid": []}

    def pooled(count: int) -> list[float]:
        parts = np.array_split(peaks, min(count, len(peaks)))
        top = float(peaks.max())
        return [round(float(part.max()) / top, 3) if top > 0 else 0.0 for part in parts]

    return {"detail": pooled(WAVEFORM_DETAIL), "grid": pooled(WAVEFORM_GRID)}


def video(path: str, mime_type: str) -> tuple[dict[str, Any], list[bytes]]:
    """A video's duration, size, poster (three sizes) and scrub strip."""
    import av

    with _open(path, mime_type) as container:
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
        seconds = _duration(container, stream)
        stream.codec_context.thread_count = DECODE_THREADS
        size = _tile_size(width, height)
        try:
            poster = _frame_at(container, stream, seconds * POSTER_AT, key_only=False)
            tiles = _scrub_frames(container, stream, seconds, size)
        except av.FFmpegError as exc:
            raise MediaRefused("MEDIA_UNREADABLE", f"The video cannot be decoded: {exc}") from None
    if poster is None:
        raise MediaRefused("MEDIA_UNREADABLE", "The video has no frame that decodes.")
    sizes = _three_sizes(poster)
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


def _three_sizes(picture: Any) -> list[bytes]:
    """A picture as 1200, 256 and 48 px WebP."""
    from cardvault.adapters.images import COMPACT, LARGE, PLACEHOLDER, webp

    frame = picture.convert("RGB")
    large = webp(frame.copy(), LARGE, 85)[1]
    compact_image, compact = webp(frame, COMPACT, 80)
    return [large, compact, webp(compact_image.copy(), PLACEHOLDER, 50)[1]]


# -- documents ---------------------------------------------------------------------------------


def pdf(path: str) -> tuple[dict[str, Any], list[bytes]]:
    """A PDF's page count, first page and text."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The PDF cannot be read: {exc}") from None
    try:
        pages = len(document)
        if pages == 0:
            raise MediaRefused("DOCUMENT_UNREADABLE", "The PDF has no page.")
        first = document[0]
        width, height = first.get_size()
        scale = min(1200 / max(width, height, 1), 4.0)
        picture = first.render(scale=scale).to_pil()
        text: list[str] = []
        for index in range(min(pages, TEXT_PAGES)):
            if sum(map(len, text)) >= TEXT_KEEP:
                break
            page = document[index]
            textpage = page.get_textpage()
            text.append(textpage.get_text_range())
            textpage.close()
            page.close()
    except pdfium.PdfiumError as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The PDF cannot be read: {exc}") from None
    finally:
        document.close()
    facts = {"preview": {"kind": "pdf", "pageCount": pages}, "text": _kept("\n".join(text))}
    return facts, _three_sizes(picture)


_XML_TAG = re.compile(r"<[^<>]{0,2000}>")  # (no "<" inside: linear on "<<<<")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_OOXML_PARTS = {  # a kind of office file: where its text is, and what it counts
    "word": (re.compile(r"^word/document\.xml$"), None),
    "ppt": (re.compile(r"^ppt/slides/slide\d+\.xml$"), "slideCount"),
    "xl": (re.compile(r"^xl/sharedStrings\.xml$"), None),
}
_SHEETS = re.compile(r"^xl/worksheets/sheet\d+\.xml$")
_APP_FACTS = {"Pages": "pageCount", "Words": "wordCount", "Slides": "slideCount"}
_ODF_FACTS = {"page-count": "pageCount", "word-count": "wordCount", "table-count": "sheetCount"}


def office(path: str, mime_type: str) -> dict[str, Any]:
    """An office file's counts and text, from its parts (each read up to PART_BYTES)."""
    preview: dict[str, Any] = {"kind": "office"}
    try:
        declared = _zip_entries(path)
        if declared is not None and declared > MAX_ENTRIES:
            raise MediaRefused(
                "DOCUMENT_UNREADABLE", f"The office file has {declared} parts; at most {MAX_ENTRIES}."
            )
        with zipfile.ZipFile(path) as archive_file:
            names = archive_file.namelist()
            if "content.xml" in names:  # OpenDocument
                meta = _part(archive_file, "meta.xml") if "meta.xml" in names else ""
                for name, field in _ODF_FACTS.items():
                    found = re.search(rf'meta:{name}="(\d{{1,9}})"', meta)
                    if found:
                        preview[field] = int(found.group(1))
                text = _xml_text(_part(archive_file, "content.xml"))
            else:
                text = _ooxml(archive_file, names, preview)
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,
        RuntimeError,
        zlib.error,
    ) as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The office file cannot be read: {exc}") from None
    return {"preview": preview, "text": _kept(text)}


def _ooxml(archive_file: zipfile.ZipFile, names: list[str], preview: dict[str, Any]) -> str:
    app = _part(archive_file, "docProps/app.xml") if "docProps/app.xml" in names else ""
    for tag, field in _APP_FACTS.items():
        found = re.search(rf"<{tag}>(\d{{1,9}})</{tag}>", app)
        if found:
            preview[field] = int(found.group(1))
    sheets = sum(1 for name in names if _SHEETS.match(name))
    if sheets:
        preview["sheetCount"] = sheets
    texts: list[str] = []
    for pattern, counted in _OOXML_PARTS.values():
        parts = sorted((n for n in names if pattern.match(n)), key=_natural)
        if counted and parts:
            preview[counted] = len(parts)
        budget = OFFICE_BYTES
        for name in parts[:OFFICE_PARTS]:
            if sum(map(len, texts)) >= TEXT_KEEP or budget <= 0:
                break
            xml = _part(archive_file, name, min(PART_BYTES, budget))
            budget -= len(xml)
            texts.append(_xml_text(xml))
    return "\n".join(texts)


def _natural(name: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", name)
    return (int(digits[-1]) if digits else 0, name)


def _part(archive_file: zipfile.ZipFile, name: str, limit: int = PART_BYTES) -> str:
    with archive_file.open(name) as part:
        return part.read(limit).decode("utf-8", errors="replace")


def _xml_text(xml: str) -> str:
    spaced = xml.replace("</w:p>", "\n").replace("</a:p>", "\n").replace("</text:p>", "\n")
    text = _XML_TAG.sub(" ", spaced)
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&")):
        text = text.replace(entity, char)
    return "\n".join(line.strip() for line in _SPACES.sub(" ", text).splitlines() if line.strip())


def archive(path: str, mime_type: str) -> dict[str, Any]:
    """An archive's counts, from its index (ZIP, EPUB, tar); a gzip file's declared size."""
    preview: dict[str, Any] = {"kind": "archive"}
    try:
        declared = _zip_entries(path) if mime_type in ("application/zip", "application/epub+zip") else None
        if declared is not None and declared > MAX_ENTRIES:  # its index is not read (its size)
            preview["entryCount"] = declared
        elif mime_type in ("application/zip", "application/epub+zip"):
            with zipfile.ZipFile(path) as archive_file:
                entries = archive_file.infolist()[:MAX_ENTRIES]
                folders = sum(1 for entry in entries if entry.is_dir())
                preview.update(
                    entryCount=len(entries),
                    directoryCount=folders,
                    fileCount=len(entries) - folders,
                    uncompressedBytes=min(sum(entry.file_size for entry in entries), 2**63 - 1),
                )
        elif mime_type == "application/x-tar":
            _tar_counts(path, preview)
        elif mime_type == "application/gzip":
            with open(path, "rb") as raw:  # the last member's size, modulo 4 GiB (RFC 1952)
                raw.seek(-4, 2)
                preview["uncompressedBytes"] = int.from_bytes(raw.read(4), "little")
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise MediaRefused("DOCUMENT_UNREADABLE", f"The archive cannot be read: {exc}") from None
    return {"preview": preview, "text": None}


_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"


def _zip_entries(path: str) -> int | None:
    """The entry count a ZIP's end record declares (ZIP64's when it has one), read from its
    last 64 KiB without reading its index; None when there is no such record."""
    with open(path, "rb") as raw:
        size = raw.seek(0, 2)
        start = max(0, size - 65_536 - 22)
        raw.seek(start)
        tail = raw.read()
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) < at + 22:
            return None
        count = int.from_bytes(tail[at + 10 : at + 12], "little")
        locator = tail.rfind(_ZIP64_LOCATOR, 0, at)
        if count == 0xFFFF and locator >= 0 and len(tail) >= locator + 20:
            record = int.from_bytes(tail[locator + 8 : locator + 16], "little")
            if 0 <= record < size:
                raw.seek(record)
                zip64 = raw.read(56)
                if zip64[:4] == b"PK\x06\x06" and len(zip64) >= 40:
                    count = int.from_bytes(zip64[32:40], "little")
        return count


def _tar_counts(path: str, preview: dict[str, Any]) -> None:
    entries = files = folders = size = 0
    with tarfile.open(path, "r:") as archive_file:  # headers only: it seeks past the contents
        for member in archive_file:
            entries += 1
            files += member.isfile()
            folders += member.isdir()
            size += member.size if member.isfile() and member.size > 0 else 0
            if entries >= MAX_ENTRIES:
                break
    preview.update(entryCount=entries, fileCount=files, directoryCount=folders, uncompressedBytes=size)


def text_file(path: str) -> dict[str, Any]:
    """A text or source file's excerpt, line count and text."""
    with Path(path).open("rb") as file:
        raw = file.read(TEXT_BYTES)
    text = raw.decode("utf-8", errors="replace")
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    preview = {"kind": "text", "excerpt": text[:EXCERPT_CHARS], "lineCount": lines}
    return {"preview": preview, "text": _kept(text)}


def _kept(text: str | None) -> str | None:
    text = (text or "").strip()
    return text[:TEXT_KEEP] or None


# -- subtitles ---------------------------------------------------------------------------------

TRANSCRIPT_CHARS = 100_000  # of a transcript, the most kept
_ASS_OVERRIDE = re.compile(r"\{[^{}]{0,500}\}")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_OVERRIDE_TAIL = re.compile(r"\\[a-z]{1,8}\d{0,4}\}")  # what is left of "{\an8}" in a WebVTT cue


def subtitles(path: str, mime_type: str) -> dict[str, Any]:
    """The text of the file's subtitle track (English first, else the first text track), one
    cue a line, a cue repeated at once kept once; ``text`` None when it has none."""
    with _open(path, mime_type) as container:
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


def speech_samples(path: str, mime_type: str, *, seconds: float, rate: int) -> Any:
    """The file's first sound track from its start, at most ``seconds``, as mono float32 at
    ``rate`` (for speech recognition); empty when it has no sound."""
    import av
    import numpy as np

    limit = int(seconds * rate)
    chunks: list[Any] = []
    total = 0
    with _open(path, mime_type) as container:
        if not container.streams.audio:
            return np.zeros(0, dtype=np.float32)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
        try:
            for frame in container.decode(container.streams.audio[0]):
                for out in resampler.resample(frame):
                    chunk = out.to_ndarray().reshape(-1)
                    chunks.append(chunk)
                    total += chunk.size
                if total >= limit:
                    break
        except av.FFmpegError as exc:
            raise MediaRefused("MEDIA_UNREADABLE", f"The sound cannot be read: {exc}") from None
    samples = np.concatenate(chunks)[:limit] if chunks else np.zeros(0, dtype=np.float32)
    return np.nan_to_num(samples, nan=0.0, posinf=1.0, neginf=-1.0).astype(np.float32, copy=False)


CAPTION_FORMATS = {"vtt": "webvtt", "srt": "srt"}  # a caption file's format, and its demuxer


def captions(path: str, caption_format: str) -> dict[str, Any]:
    """A caption file's text as ``subtitles`` gives a track's, and how many cues have text."""
    import av

    try:
        container = av.open(path, format=CAPTION_FORMATS[caption_format], options=_OPTIONS)
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
