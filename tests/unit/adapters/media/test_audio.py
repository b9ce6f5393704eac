"""The audio reader's own rules (cardvault.adapters.media.audio), called in this process: the
waveform's buckets and scale, the sampled waveform of a long file, what a file's bytes did not
show, and loudness."""

from __future__ import annotations

import math
import struct
import wave
from pathlib import Path

import av
import numpy as np
import pytest

from cardvault.adapters.media import MediaRefused, audio
from harness import media_files


def test_a_waveform_is_the_peak_of_each_stretch_as_a_fraction_of_the_loudest() -> None:
    peaks = [0.1] * 500 + [0.5] * 500 + [0.25] * 1000
    shape = audio.waveform(peaks)
    assert len(shape["detail"]) == audio.WAVEFORM_DETAIL and len(shape["grid"]) == audio.WAVEFORM_GRID
    assert shape["detail"][:250] == [0.2] * 250 and shape["detail"][250:500] == [1.0] * 250
    assert shape["detail"][-1] == 0.5 and shape["grid"][0] == 0.2


def test_silence_is_all_zero_and_nothing_is_empty() -> None:
    assert audio.waveform([0.0] * 50) == {"detail": [0.0] * 50, "grid": [0.0] * 50}
    assert audio.waveform([]) == {"detail": [], "grid": []}


def test_a_long_file_is_sampled_bucket_by_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(media_files.audio(tmp_path / "tone.mp3", seconds=4))
    every_sample = audio.audio(path, "audio/mpeg")["waveform"]["grid"]
    monkeypatch.setattr(audio, "FULL_DECODE_SECONDS", 1)  # as if it were longer than 20 minutes
    sampled = audio.audio(path, "audio/mpeg")
    assert len(sampled["waveform"]["detail"]) == audio.WAVEFORM_DETAIL
    grid = sampled["waveform"]["grid"]
    assert grid[5] < grid[30] < grid[55] and max(grid) == 1.0  # the same growing tone
    assert abs(sum(grid) / len(grid) - sum(every_sample) / len(every_sample)) < 0.2  # an estimate


def test_a_format_the_bytes_did_not_show_is_refused(tmp_path: Path) -> None:
    path = media_files.audio(tmp_path / "tone.mp3")
    with pytest.raises(MediaRefused) as refused:
        audio.audio(str(path), "audio/x-unknown")
    assert refused.value.code == "MEDIA_UNREADABLE"


def _wav(path: Path, channels: list[list[float]], rate: int, info: bytes = b"") -> Path:
    """A 16-bit WAV of these channels' samples (-1 to 1), with an optional LIST/INFO chunk."""
    frames = np.stack([np.asarray(c) for c in channels], axis=1)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(len(channels))
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((frames * 32767).astype("<i2").tobytes())
    if info:
        data = path.read_bytes() + b"LIST" + struct.pack("<I", len(info) + 4) + b"INFO" + info
        path.write_bytes(data[:4] + struct.pack("<I", len(data) - 8) + data[8:])
    return path


def test_title_metadata_that_is_not_utf8_does_not_make_the_file_unreadable(tmp_path: Path) -> None:
    title = "Beyoncé".encode("latin-1") + b"\x00"
    silence = [[0.0] * 8000]
    path = _wav(tmp_path / "a.wav", silence, 8000, b"INAM" + struct.pack("<I", len(title)) + title)
    assert audio.audio(str(path), "audio/wav")["durationMs"] == 1000


def test_loudness_counts_every_channel_and_the_high_notes(tmp_path: Path) -> None:
    rate = 48_000
    t = np.arange(rate) / rate
    loud_high = 0.9 * np.sin(2 * np.pi * 6_000 * t)  # above what an 8 kHz resampling keeps
    quiet = 0.2 * np.sin(2 * np.pi * 440 * t)
    left = np.concatenate((loud_high, quiet))
    right = np.concatenate((-loud_high, quiet))  # opposite phase: a downmix would cancel it
    shape = audio.audio(str(_wav(tmp_path / "b.wav", [left, right], rate)), "audio/wav")["waveform"]
    first, second = shape["grid"][:30], shape["grid"][34:]
    assert min(first) > 0.9 and max(second) < 0.3


def test_a_waveform_never_holds_a_value_json_cannot_carry(tmp_path: Path) -> None:
    samples = np.zeros(8000, dtype=np.float32)
    samples[100] = np.inf
    path = tmp_path / "c.wav"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_f32le", rate=8000)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = 8000
        for packet in [*stream.encode(frame), *stream.encode()]:
            out.mux(packet)
    shape = audio.audio(str(path), "audio/wav")["waveform"]
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in shape["detail"] + shape["grid"])
