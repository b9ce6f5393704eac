"""Images decoded where they cannot hurt: uploaded images are untrusted, so Pillow reads them
in a child process with a memory and CPU limit, which a hostile file can only crash or stall;
the caller gets a clear error code and a fresh child for the next image.

``renditions(path)`` answers an image's display size and two WebP renditions: ``compact``
(fits 256 x 256) and ``placeholder`` (fits 48 x 48), and with ``large`` a third that fits
1200 x 1200 (a link's replaced image); EXIF orientation applied, metadata stripped (nothing but
the pixels is written), from the first frame of an animation; and its main colours.
``media(path, ...)`` runs cardvault.adapters.media in the same child: audio, video and
documents; ``captions(path, ...)`` reads a caption file's cues. ``speech(path, ...)`` runs
speech recognition (cardvault.adapters.speech), in a Decoder of its own: a child that keeps
the model, with 15 minutes of wall time and 30 of CPU (two threads) for each file.

Limits: 100,000,000 pixels (Pillow's decompression-bomb check, turned into an error) and 10,000
pixels a side, both read from the header before anything is decoded; the child has 2 GiB of
address space and 60 s of CPU for each image (90 s for another file), and the caller waits at
most ``TIMEOUT_SECONDS`` (``MEDIA_TIMEOUT_SECONDS``)."""

from __future__ import annotations

import dataclasses
import io
import json
import multiprocessing
import threading
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MAX_PIXELS = 100_000_000
MAX_SIDE = 10_000
FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "AVIF")
TIMEOUT_SECONDS = 30.0
CHILD_MEMORY_BYTES = 2 * 1024**3
CHILD_CPU_SECONDS = 60
MEDIA_TIMEOUT_SECONDS = 90.0  # an audio, video or document file (cardvault.adapters.media)
MEDIA_CPU_SECONDS = 90
SPEECH_TIMEOUT_SECONDS = 900.0  # 30 minutes of sound take about 5 on two cores
SPEECH_CPU_SECONDS = 1800
COMPACT, PLACEHOLDER, LARGE = 256, 48, 1200
MAIN_COLOURS, MAIN_SHARE = 5, 0.05


@dataclasses.dataclass(frozen=True)
class Renditions:
    width: int  # as displayed (after EXIF orientation)
    height: int
    animated: bool
    compact: bytes  # WebP
    placeholder: bytes  # WebP
    large: bytes | None = None  # WebP, when asked for
    colors: tuple[str, ...] = ()  # the main colours, "#rrggbb", most covering first


class ImageRefused(Exception):
    """The image cannot be made into renditions; ``code`` is stable: IMAGE_TOO_LARGE,
    IMAGE_UNREADABLE, IMAGE_UNSUPPORTED, DECODE_TIMEOUT, DECODE_FAILED, or DECODE_BUSY (the
    decoder stayed busy with other images longer than the caller waits)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- in the child ------------------------------------------------------------------------------


def _limit_child() -> None:
    import resource  # POSIX only, and only in the child

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def _cpu_budget(seconds: int) -> None:
    """Allow the next file this many seconds of CPU (the limit counts the child's whole life,
    so it moves on before each file)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (spent + seconds, resource.RLIM_INFINITY))


def webp(image: Any, size: int, quality: int) -> tuple[Any, bytes]:
    image.thumbnail((size, size))
    out = io.BytesIO()
    image.save(out, "WEBP", quality=quality, method=4)
    return image, out.getvalue()


def make(path: str, large: bool = False) -> Renditions:
    """Decode the image at ``path`` and make its renditions (runs in the child)."""
    from PIL import Image, ImageOps, UnidentifiedImageError  # in the child only

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    warnings.simplefilter("error", Image.DecompressionBombWarning)
    try:
        with Image.open(path, formats=FORMATS) as image:
            width, height = image.size
            if max(width, height) > MAX_SIDE:
                raise ImageRefused(
                    "IMAGE_TOO_LARGE", f"The image is {width} x {height}; at most {MAX_SIDE} a side."
                )
            if image.getexif().get(0x0112) in (5, 6, 7, 8):  # turned a quarter: sides swap
                width, height = height, width
            animated = bool(getattr(image, "is_animated", False))
            image.seek(0)
            if image.format == "JPEG":  # decode at a fraction of the size
                side = LARGE if large else COMPACT * 2
                image.draft("RGB", (side, side))
            frame = ImageOps.exif_transpose(image)
            alpha = frame.mode in ("RGBA", "LA", "PA") or "transparency" in frame.info
            frame = frame.convert("RGBA" if alpha else "RGB")
            big = webp(frame.copy(), LARGE, 85)[1] if large else None
            compact_image, compact = webp(frame, COMPACT, 80)
            main = main_colours(compact_image)
            _, placeholder = webp(compact_image.copy(), PLACEHOLDER, 50)
    except ImageRefused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRefused("IMAGE_TOO_LARGE", f"The image has too many pixels: {exc}") from None
    except UnidentifiedImageError:
        raise ImageRefused(
            "IMAGE_UNSUPPORTED", "The file is not a JPEG, PNG, GIF, WebP or AVIF image."
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRefused("IMAGE_UNREADABLE", f"The image cannot be read: {exc}") from None
    return Renditions(width, height, animated, compact, placeholder, big, main)


def main_colours(image: Any) -> tuple[str, ...]:
    """Up to MAIN_COLOURS colours that each cover at least MAIN_SHARE of the picture once it is
    reduced to 8 colours (median cut), most covering first; transparent pixels do not count."""
    from PIL import Image

    rgb = image.convert("RGB")
    if image.mode == "RGBA":  # only the pixels one sees are reduced
        alpha = image.getchannel("A").get_flattened_data()
        visible = [pixel for pixel, a in zip(rgb.get_flattened_data(), alpha, strict=True) if a >= 128]
        if not visible:
            return ()
        rgb = Image.new("RGB", (len(visible), 1))
        rgb.putdata(visible)
    reduced = rgb.quantize(colors=8, method=Image.Quantize.MEDIANCUT)
    palette = reduced.getpalette() or []
    counts = sorted(reduced.getcolors(256) or [], key=lambda c: (-c[0], c[1]))
    total = sum(n for n, _ in counts)
    found: list[str] = []
    for count, index in counts:
        if len(found) == MAIN_COLOURS or count < total * MAIN_SHARE:
            break
        value = "#{:02x}{:02x}{:02x}".format(*palette[index * 3 : index * 3 + 3])
        if value not in found:
            found.append(value)
    return tuple(found)


def _image_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    made = make(request["path"], request["large"])
    head = {
        "width": made.width,
        "height": made.height,
        "animated": made.animated,
        "colors": list(made.colors),
    }
    parts = [made.compact, made.placeholder, *([made.large] if made.large is not None else [])]
    return head, parts


def _media_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    from cardvault.adapters import media  # in the child only: PyAV and PDFium load here

    try:
        if request.get("subtitles"):
            return media.subtitles(request["path"], request["mime_type"]), []
        return media.analyse(request["path"], file_kind=request["file_kind"], mime_type=request["mime_type"])
    except media.MediaRefused as refused:
        raise ImageRefused(refused.code, str(refused)) from None
    except MemoryError:
        raise
    except Exception as exc:  # a file that breaks a library in a way it does not foresee
        code = "MEDIA_UNREADABLE" if request["file_kind"] in ("audio", "video") else "DOCUMENT_UNREADABLE"
        raise ImageRefused(code, f"The file cannot be read: {type(exc).__name__}: {exc}") from None


def _captions_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    from cardvault.adapters import media

    try:
        return media.captions(request["path"], request["format"]), []
    except media.MediaRefused as refused:
        raise ImageRefused(refused.code, str(refused)) from None
    except MemoryError:
        raise
    except Exception as exc:  # as _media_job
        raise ImageRefused(
            "CAPTIONS_UNREADABLE", f"Its cues cannot be read: {type(exc).__name__}: {exc}"
        ) from None


def _speech_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    from cardvault.adapters import media, speech

    try:
        samples = media.speech_samples(
            request["path"], request["mime_type"], seconds=speech.MAX_SECONDS, rate=speech.SAMPLE_RATE
        )
        return speech.transcribe(samples, limit=media.TRANSCRIPT_CHARS), []
    except media.MediaRefused as refused:
        raise ImageRefused(refused.code, str(refused)) from None
    except speech.WeightsChanged as changed:
        raise ImageRefused("SPEECH_MODEL_CHANGED", str(changed)) from None
    except (ImportError, OSError) as exc:  # the libraries or model files of the asr extra
        raise ImageRefused("SPEECH_UNAVAILABLE", f"Speech recognition cannot run: {exc}") from None
    except MemoryError:
        raise
    except Exception as exc:  # as _media_job
        raise ImageRefused(
            "MEDIA_UNREADABLE", f"The sound cannot be read: {type(exc).__name__}: {exc}"
        ) from None


_JOBS = {"image": _image_job, "media": _media_job, "captions": _captions_job, "speech": _speech_job}


def _serve(connection: Connection) -> None:
    """The child's loop: one JSON request in; out, a JSON head (the facts, and how many byte
    parts follow) and the parts. Only bytes and JSON cross the pipe (the parent never
    unpickles what a child that read a hostile file sends)."""
    _limit_child()
    while True:
        try:
            request = json.loads(connection.recv_bytes())
        except EOFError:
            return
        _cpu_budget(int(request.get("cpu", CHILD_CPU_SECONDS)))
        try:
            head, parts = _JOBS[request["job"]](request)
        except ImageRefused as refused:
            connection.send_bytes(json.dumps({"refused": [refused.code, str(refused)]}).encode())
            continue
        except MemoryError:
            failed = ["DECODE_FAILED", "Decoding the file ran out of memory."]
            connection.send_bytes(json.dumps({"refused": failed}).encode())
            continue
        connection.send_bytes(json.dumps({**head, "parts": len(parts)}, allow_nan=False).encode())
        for part in parts:
            connection.send_bytes(part)


# -- in the caller -----------------------------------------------------------------------------


class Decoder:
    """One child process that decodes one image at a time (callers queue on a lock); it is
    started on first use and replaced after a timeout or a crash."""

    def __init__(self, timeout: float = TIMEOUT_SECONDS, wait: float | None = None) -> None:
        self.timeout = timeout
        self.wait = wait  # how long a caller waits for the decoder (None: as long as it takes)
        self._lock = threading.Lock()
        self._child: Any = None
        self._connection: Connection | None = None

    def renditions(self, path: Path, *, large: bool = False) -> Renditions:
        """Renditions of the image at ``path``; ImageRefused with DECODE_BUSY when other
        files held the decoder longer than ``wait``."""
        head, parts = self.call({"job": "image", "path": str(path), "large": large})
        return Renditions(
            int(head["width"]),
            int(head["height"]),
            bool(head["animated"]),
            parts[0],
            parts[1],
            parts[2] if large else None,
            tuple(str(c) for c in head.get("colors", ())),
        )

    def media(
        self, path: Path, *, file_kind: str, mime_type: str, subtitles: bool = False
    ) -> tuple[dict[str, Any], list[bytes]]:
        """The facts and pictures of an audio, video or document file
        (cardvault.adapters.media), or with ``subtitles`` the text of its subtitle track;
        ImageRefused with the file's code when it cannot be read."""
        request = {
            "job": "media",
            "path": str(path),
            "file_kind": file_kind,
            "mime_type": mime_type,
            "subtitles": subtitles,
            "cpu": MEDIA_CPU_SECONDS,
        }
        return self.call(request, timeout=MEDIA_TIMEOUT_SECONDS)

    def captions(self, path: Path, *, caption_format: str) -> dict[str, Any]:
        """The text of a WebVTT (``vtt``) or SubRip (``srt``) caption file and how many cues
        have text (cardvault.adapters.media.captions); ImageRefused with CAPTIONS_UNREADABLE
        when it cannot be read."""
        head, _ = self.call({"job": "captions", "path": str(path), "format": caption_format})
        return head

    def speech(self, path: Path, *, mime_type: str) -> dict[str, Any]:
        """The words heard in an audio or video file (cardvault.adapters.speech.transcribe);
        ImageRefused with the file's code when it cannot be read."""
        request = {"job": "speech", "path": str(path), "mime_type": mime_type, "cpu": SPEECH_CPU_SECONDS}
        head, _ = self.call(request, timeout=SPEECH_TIMEOUT_SECONDS)
        return head

    def call(
        self, request: dict[str, Any], timeout: float | None = None
    ) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request to the child and answer its head and parts."""
        if not self._lock.acquire(timeout=-1 if self.wait is None else self.wait):
            raise ImageRefused("DECODE_BUSY", "Other files are being decoded; try again in a moment.")
        try:
            return self._exchange(request, self.timeout if timeout is None else timeout)
        finally:
            self._lock.release()

    def _exchange(self, request: dict[str, Any], timeout: float) -> tuple[dict[str, Any], list[bytes]]:
        connection = self._ensure()
        try:
            connection.send_bytes(json.dumps(request).encode())
            if not connection.poll(timeout):
                self._stop()
                raise ImageRefused("DECODE_TIMEOUT", f"Decoding took longer than {timeout:.0f} s.")
            head = json.loads(connection.recv_bytes())
            if "refused" in head:
                code, message = head["refused"]
                raise ImageRefused(str(code), str(message))
            parts = [connection.recv_bytes() for _ in range(int(head.pop("parts")))]
        except ImageRefused:
            raise
        except (EOFError, OSError):  # the child died: out of memory or CPU, or a crash
            self._stop()
            raise ImageRefused("DECODE_FAILED", "The decoder stopped while reading the file.") from None
        except BaseException:  # interrupted mid-exchange: what is left in the pipe is no one's
            self._stop()
            raise
        return head, parts

    def _ensure(self) -> Connection:
        if self._child is None or not self._child.is_alive():
            context = multiprocessing.get_context("spawn")  # never fork a threaded process
            ours, theirs = context.Pipe()
            self._child = context.Process(
                target=_serve, args=(theirs,), daemon=True, name="cardvault-decoder"
            )
            self._child.start()
            theirs.close()
            self._connection = ours
        assert self._connection is not None
        return self._connection

    def _stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.join(5)
        if self._connection is not None:
            self._connection.close()
        self._child = self._connection = None

    def close(self) -> None:
        with self._lock:
            self._stop()
