"""The media reader's own rules, called in this process: the waveform's buckets and scale, the
sampled waveform of a long file, subtitle track choice, and what a document's text keeps."""

from __future__ import annotations

import math
import struct
import wave
from pathlib import Path

import av
import numpy as np
import pytest

from cardvault.adapters import media
from tests import media_files


def test_a_waveform_is_the_peak_of_each_stretch_as_a_fraction_of_the_loudest() -> None:
    peaks = [0.1] * 500 + [0.5] * 500 + [0.25] * 1000
    shape = media.waveform(peaks)
    assert len(shape["detail"]) == media.WAVEFORM_DETAIL and len(shape["grid"]) == media.WAVEFORM_GRID
    assert shape["detail"][:250] == [0.2] * 250 and shape["detail"][250:500] == [1.0] * 250
    assert shape["detail"][-1] == 0.5 and shape["grid"][0] == 0.2


def test_silence_is_all_zero_and_nothing_is_empty() -> None:
    assert media.waveform([0.0] * 50) == {"detail": [0.0] * 50, "grid": [0.0] * 50}
    assert media.waveform([]) == {"detail": [], "grid": []}


def test_a_long_file_is_sampled_bucket_by_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(media_files.audio(tmp_path / "tone.mp3", seconds=4))
    every_sample = media.audio(path, "audio/mpeg")["waveform"]["grid"]
    monkeypatch.setattr(media, "FULL_DECODE_SECONDS", 1)  # as if it were longer than 20 minutes
    sampled = media.audio(path, "audio/mpeg")
    assert len(sampled["waveform"]["detail"]) == media.WAVEFORM_DETAIL
    grid = sampled["waveform"]["grid"]
    assert grid[5] < grid[30] < grid[55] and max(grid) == 1.0  # the same growing tone
    assert abs(sum(grid) / len(grid) - sum(every_sample) / len(every_sample)) < 0.2  # an estimate


def test_the_english_track_is_chosen_else_the_first(tmp_path: Path) -> None:
    plain = media_files.video(tmp_path / "clip.mkv", sound=False)
    french = media_files.with_subtitles(
        tmp_path / "fr.mkv", plain, "1\n00:00:01,000 --> 00:00:02,000\nBonjour\n\n", "fra"
    )
    assert media.subtitles(str(french), "video/x-matroska") == {"text": "Bonjour", "language": "fra"}
    assert media.subtitles(str(plain), "video/x-matroska") == {"text": None, "language": None}


def test_a_documents_text_is_kept_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("word " * 10_000)
    facts = media.text_file(str(path))
    assert len(facts["text"]) == media.TEXT_KEEP and facts["preview"]["lineCount"] == 1
    assert facts["preview"]["excerpt"] == ("word " * 10_000)[: media.EXCERPT_CHARS]


def test_a_format_the_bytes_did_not_show_is_refused(tmp_path: Path) -> None:
    path = media_files.audio(tmp_path / "tone.mp3")
    with pytest.raises(media.MediaRefused) as refused:
        media.audio(str(path), "audio/x-unknown")
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
    assert media.audio(str(path), "audio/wav")["durationMs"] == 1000


def test_loudness_counts_every_channel_and_the_high_notes(tmp_path: Path) -> None:
    rate = 48_000
    t = np.arange(rate) / rate
    loud_high = 0.9 * np.sin(2 * np.pi * 6_000 * t)  # above what an 8 kHz resampling keeps
    quiet = 0.2 * np.sin(2 * np.pi * 440 * t)
    left = np.concatenate((loud_high, quiet))
    right = np.concatenate((-loud_high, quiet))  # opposite phase: a downmix would cancel it
    shape = media.audio(str(_wav(tmp_path / "b.wav", [left, right], rate)), "audio/wav")["waveform"]
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
    shape = media.audio(str(path), "audio/wav")["waveform"]
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in shape["detail"] + shape["grid"])


def test_caption_cues_lose_styling_escapes_and_control_characters_and_all_are_counted(tmp_path: Path) -> None:
    vtt = tmp_path / "c.vtt"
    cues = "".join(
        f"00:{n // 60:02}:{n % 60:02}.000 --> 00:{n // 60:02}:{n % 60:02}.500\nline {n}\n\n"
        for n in range(30)
    )
    vtt.write_text(
        "WEBVTT\n\n00:00.000 --> 00:00.500\n{\\an8}<i>Hello</i> \\N there\x01\x02 now\n\n" + cues,
        encoding="utf-8",
    )
    read = media.captions(str(vtt), "vtt")
    assert read["text"].splitlines()[:2] == ["Hello there now", "line 0"]
    assert read["cues"] == 31


def test_a_caption_files_cues_are_all_counted_past_the_transcripts_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(media, "TRANSCRIPT_CHARS", 40)
    srt = tmp_path / "c.srt"
    srt.write_text(
        "".join(f"{n + 1}\n00:00:{n:02},000 --> 00:00:{n:02},500\nline number {n}\n\n" for n in range(50)),
        encoding="utf-8",
    )
    read = media.captions(str(srt), "srt")
    assert read["cues"] == 50 and len(read["text"]) <= 40
