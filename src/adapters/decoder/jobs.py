"""The decoder's job table: what its child runs for each kind of request (``image``, ``media``,
``captions``, ``speech``), every failure made into an ImageRefused with a stable code."""

from __future__ import annotations

from typing import Any

from cardvault.adapters import media, speech
from cardvault.adapters.images import ImageRefused, make


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


JOBS = {"image": _image_job, "media": _media_job, "captions": _captions_job, "speech": _speech_job}
