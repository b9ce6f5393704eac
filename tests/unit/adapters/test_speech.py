"""Speech recognition (the asr extra): its pinned model files, the sound it is given, and what
it hears in a real recording."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from cardvault.adapters import speech
from cardvault.adapters.media import audio
from harness import media_files
from harness.media_files import FOX
from tests.speech_extra import require_speech


@pytest.fixture(autouse=True)
def _installed() -> None:
    require_speech()


def test_the_installed_model_files_are_the_pinned_ones() -> None:
    speech.check()  # raises on a change


def test_a_changed_missing_or_added_file_is_refused() -> None:
    files = {name: b"" for name in speech.WEIGHTS}
    with pytest.raises(speech.WeightsChanged, match=r"model\.bin has sha256 e3b0c442"):
        speech.verify(files)
    config = speech.model_parts()["config.json"][0]
    pinned = {
        name: b"".join(part.read_bytes() for part in parts) for name, parts in speech.model_parts().items()
    }
    speech.verify(pinned)
    changed = bytearray(pinned["config.json"])
    changed[-2] ^= 1
    with pytest.raises(speech.WeightsChanged, match=r"config\.json"):
        speech.verify({**pinned, "config.json": bytes(changed)})
    with pytest.raises(speech.WeightsChanged):
        speech.verify({k: v for k, v in pinned.items() if k != "tokenizer.json"})
    with pytest.raises(speech.WeightsChanged):
        speech.verify({**pinned, "preprocessor_config.json": b"{}"})
    assert hashlib.sha256(config.read_bytes()).hexdigest() == speech.WEIGHTS["config.json"]


def test_sound_is_read_mono_at_16_khz_up_to_its_limit(tmp_path: Path) -> None:
    tone = media_files.audio(tmp_path / "tone.mp3", seconds=3)
    whole = audio.speech_samples(str(tone), "audio/mpeg", seconds=60, rate=16_000)
    assert whole.ndim == 1 and str(whole.dtype) == "float32" and 2.9 * 16_000 < whole.size < 3.2 * 16_000
    cut = audio.speech_samples(str(tone), "audio/mpeg", seconds=1, rate=16_000)
    assert cut.size == 16_000
    silent = media_files.video(tmp_path / "mute.mp4", sound=False)
    assert audio.speech_samples(str(silent), "video/mp4", seconds=60, rate=16_000).size == 0


def test_the_words_of_a_recording_are_heard() -> None:
    samples = audio.speech_samples(str(FOX), "audio/ogg", seconds=speech.MAX_SECONDS, rate=speech.SAMPLE_RATE)
    heard = speech.transcribe(samples, limit=10_000)
    text = heard["text"].lower()
    assert "quick brown fox" in text and "lazy dog" in text and "starter" in text
    assert heard["language"] == "en"
    assert speech.transcribe(samples, limit=20)["text"] == heard["text"][:20].strip()
    assert speech.transcribe(samples[:1000], limit=10_000) == {"text": None, "language": None}


def test_long_sound_is_heard_a_stretch_at_a_time_in_the_first_stretchs_language() -> None:
    samples = audio.speech_samples(str(FOX), "audio/ogg", seconds=speech.MAX_SECONDS, rate=speech.SAMPLE_RATE)
    padded = np.concatenate([samples, np.zeros(9 * speech.SAMPLE_RATE - samples.size, dtype=np.float32)])
    heard = speech.transcribe(np.concatenate([padded, padded]), limit=10_000, chunk_seconds=9)
    assert heard["text"].lower().count("quick brown fox") == 2 and heard["language"] == "en"
