"""Opening audio and video files (cardvault.adapters.media.containers): always with the demuxer of
the type their bytes showed, never FFmpeg's guess; and the length a stream's header states,
believed only when it is sensible."""

from __future__ import annotations

import fractions
from pathlib import Path
from types import SimpleNamespace

import av
import pytest

from cardvault.adapters.media import MediaRefused
from cardvault.adapters.media.containers import FORMATS, MAX_SECONDS, open_container, stated_seconds
from harness import media_files


def test_every_sniffed_type_has_a_demuxer_ffmpeg_provides() -> None:
    assert set(FORMATS.values()) <= av.formats_available


@pytest.mark.parametrize(("name", "mime_type"), [("clip.mp4", "video/mp4"), ("clip.mkv", "video/x-matroska")])
def test_a_video_opens_with_its_demuxer(tmp_path: Path, name: str, mime_type: str) -> None:
    path = media_files.video(tmp_path / name, seconds=1)
    with open_container(str(path), mime_type) as container:
        assert len(container.streams.video) == 1 and len(container.streams.audio) == 1


def test_an_audio_file_opens_with_its_demuxer(tmp_path: Path) -> None:
    path = media_files.audio(tmp_path / "tone.mp3", seconds=1)
    with open_container(str(path), "audio/mpeg") as container:
        assert container.format.name == "mp3" and len(container.streams.audio) == 1


def test_a_file_is_never_read_as_what_ffmpeg_would_guess(tmp_path: Path) -> None:
    path = media_files.audio(tmp_path / "tone.mp3", seconds=1)
    with av.open(str(path)):
        pass  # FFmpeg itself would read it
    with pytest.raises(MediaRefused) as refused:
        open_container(str(path), "video/mp4")
    assert refused.value.code == "MEDIA_UNREADABLE"


@pytest.mark.parametrize("mime_type", ["video/x-unknown", "application/x-mpegurl", "image/png"])
def test_a_type_without_a_demuxer_of_ours_is_refused(tmp_path: Path, mime_type: str) -> None:
    path = media_files.audio(tmp_path / "tone.mp3", seconds=1)
    with pytest.raises(MediaRefused) as refused:
        open_container(str(path), mime_type)
    assert refused.value.code == "MEDIA_UNREADABLE"


@pytest.mark.parametrize("data", [b"", b"\x00" * 64, b"\x00\x00\x00\x18ftypisom" + b"\xff" * 100])
def test_bytes_that_are_no_container_are_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "broken.mp4"
    path.write_bytes(data)
    with pytest.raises(MediaRefused) as refused:
        open_container(str(path), "video/mp4")
    assert refused.value.code == "MEDIA_UNREADABLE" and "cannot be read" in str(refused.value)


def test_the_stated_length_of_a_real_stream(tmp_path: Path) -> None:
    path = media_files.video(tmp_path / "clip.mp4", seconds=2, sound=False)
    with open_container(str(path), "video/mp4") as container:
        assert stated_seconds(container, container.streams.video[0]) == pytest.approx(2.0, abs=0.15)


def _stream(duration: int | None, time_base: fractions.Fraction | None) -> SimpleNamespace:
    return SimpleNamespace(duration=duration, time_base=time_base)


def test_without_a_stream_length_the_container_length_counts() -> None:
    container = SimpleNamespace(duration=3_500_000)  # microseconds, as FFmpeg states it
    assert stated_seconds(container, _stream(None, fractions.Fraction(1, 1000))) == 3.5
    assert stated_seconds(container, _stream(1000, None)) == 3.5
    assert stated_seconds(SimpleNamespace(duration=None), _stream(None, None)) == 0.0


@pytest.mark.parametrize(
    "stream",
    [
        _stream(0, fractions.Fraction(1, 1000)),
        _stream(-5000, fractions.Fraction(1, 1000)),
        _stream((MAX_SECONDS + 1) * 1000, fractions.Fraction(1, 1000)),
        _stream(2**62, fractions.Fraction(1, 1)),
    ],
)
def test_a_length_that_is_not_sensible_is_not_believed(stream: SimpleNamespace) -> None:
    assert stated_seconds(SimpleNamespace(duration=None), stream) == 0.0


def test_a_week_less_a_second_is_believed() -> None:
    stream = _stream((MAX_SECONDS - 1) * 1000, fractions.Fraction(1, 1000))
    assert stated_seconds(SimpleNamespace(duration=None), stream) == MAX_SECONDS - 1
