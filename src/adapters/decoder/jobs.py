"""The decoder's job table: what its child runs for each kind of request (``image``, ``media``,
``captions``, ``speech``, ``ocr``), every failure made into an ImageRefused with a stable code."""

from __future__ import annotations

from typing import Any

from cardvault.adapters import ocr, speech
from cardvault.adapters.images import ImageRefused, make
from cardvault.adapters.media import MediaRefused, audio, documents, subtitles, video


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
    try:
        if request.get("subtitles"):
            return subtitles.subtitles(request["path"], request["mime_type"]), []
        return _analyse(request["path"], file_kind=request["file_kind"], mime_type=request["mime_type"])
    except MediaRefused as refused:
        raise ImageRefused(refused.code, str(refused)) from None
    except MemoryError:
        raise
    except Exception as exc:  # a file that breaks a library in a way it does not foresee
        code = "MEDIA_UNREADABLE" if request["file_kind"] in ("audio", "video") else "DOCUMENT_UNREADABLE"
        raise ImageRefused(code, f"The file cannot be read: {type(exc).__name__}: {exc}") from None


def _analyse(path: str, *, file_kind: str, mime_type: str) -> tuple[dict[str, Any], list[bytes]]:
    """Facts of the file and its pictures (see cardvault.adapters.media), by its kind."""
    if file_kind == "audio":
        return audio.audio(path, mime_type), []
    if file_kind == "video":
        return video.video(path, mime_type)
    if file_kind == "pdf":
        return documents.pdf(path)
    if file_kind == "office":
        return documents.office(path, mime_type), []
    if file_kind == "archive":
        return documents.archive(path, mime_type), []
    return documents.text_file(path), []


def _captions_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    try:
        return subtitles.captions(request["path"], request["format"]), []
    except MediaRefused as refused:
        raise ImageRefused(refused.code, str(refused)) from None
    except MemoryError:
        raise
    except Exception as exc:  # as _media_job
        raise ImageRefused(
            "CAPTIONS_UNREADABLE", f"Its cues cannot be read: {type(exc).__name__}: {exc}"
        ) from None


def _speech_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    try:
        samples = audio.speech_samples(
            request["path"], request["mime_type"], seconds=speech.MAX_SECONDS, rate=speech.SAMPLE_RATE
        )
        return speech.transcribe(samples, limit=subtitles.TRANSCRIPT_CHARS), []
    except MediaRefused as refused:
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


def _ocr_job(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    options = {
        key: request[key]
        for key in ("folder", "languages", "min_confidence", "max_pixels", "seconds", "pages")
    }
    try:
        read = ocr.read_pdf if request["source"] == "pdf" else ocr.read_image
        return {**read(request["path"], **options), "engine": ocr.version()}, []
    except ImageRefused:
        raise
    except (ImportError, RuntimeError) as exc:  # the binding, or a language file it cannot load
        raise ImageRefused("OCR_UNAVAILABLE", f"OCR cannot run: {exc}") from None
    except MemoryError:
        raise
    except Exception as exc:  # as _media_job
        raise ImageRefused(
            "IMAGE_UNREADABLE", f"The picture cannot be read: {type(exc).__name__}: {exc}"
        ) from None


JOBS = {
    "image": _image_job,
    "media": _media_job,
    "captions": _captions_job,
    "speech": _speech_job,
    "ocr": _ocr_job,
}
