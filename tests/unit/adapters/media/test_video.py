"""A video's facts and pictures (cardvault.adapters.media.video), read in this process: its
duration and coded size, a poster a tenth of the way in as three WebP sizes, and a scrub strip
of key frames, one a stretch, laid out in rows."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageStat

from cardvault.adapters.media import MediaRefused, video
from harness import media_files


def _picture(data: bytes) -> Any:
    picture = Image.open(io.BytesIO(data))
    assert picture.format == "WEBP"
    return picture


def _red(picture: Any, box: tuple[int, int, int, int]) -> float:
    """The mean red of a box in the frame's lower right (where the test video has no blue)."""
    return float(ImageStat.Stat(picture.convert("RGB").crop(box)).mean[0])


def test_a_video_has_its_duration_size_poster_and_scrub_strip(tmp_path: Path) -> None:
    path = media_files.video(tmp_path / "clip.mp4", seconds=4, size=(320, 240))
    facts, pictures = video.video(str(path), "video/mp4")
    assert facts["width"] == 320 and facts["height"] == 240
    assert facts["durationMs"] == pytest.approx(4000, abs=150)
    assert facts["scrub"] == {"frameWidth": 160, "frameHeight": 120, "frames": 4, "columns": 4}
    large, compact, placeholder, strip = (_picture(p) for p in pictures)
    assert (large.size, compact.size, placeholder.size) == ((320, 240), (256, 192), (48, 36))
    assert strip.size == (4 * 160, 120)


def test_the_poster_is_a_tenth_of_the_way_in_and_the_tiles_go_forward_in_time(tmp_path: Path) -> None:
    # The test video's red grows from 0 to 255 over its length; a key frame each second.
    path = media_files.video(tmp_path / "clip.mp4", seconds=4, size=(320, 240), sound=False)
    _, pictures = video.video(str(path), "video/mp4")
    poster_red = _red(_picture(pictures[0]), (200, 150, 320, 240))
    assert 0.05 * 255 < poster_red < 0.2 * 255  # at 0.4 s of 4
    strip = _picture(pictures[3])
    reds = [_red(strip, (i * 160 + 100, 70, i * 160 + 160, 120)) for i in range(4)]
    # Tile i is the key frame at or before (i + 0.5) s: the frames at 0, 1, 2 and 3 s.
    assert reds == sorted(reds) and reds[0] < 20
    assert [round(r / 255 * 4) for r in reds[1:]] == [1, 2, 3]


def test_a_long_video_has_at_most_forty_tiles_in_rows_of_ten(tmp_path: Path) -> None:
    path = media_files.video(tmp_path / "long.mkv", seconds=45, size=(64, 48), sound=False, rate=1)
    facts, pictures = video.video(str(path), "video/x-matroska")
    assert facts["scrub"] == {"frameWidth": 160, "frameHeight": 120, "frames": 40, "columns": 10}
    assert _picture(pictures[3]).size == (1600, 480)
    assert _picture(pictures[0]).size == (64, 48)  # a small poster is not enlarged


def test_a_tall_video_has_tall_tiles_within_four_widths(tmp_path: Path) -> None:
    path = media_files.video(tmp_path / "tall.mp4", seconds=1, size=(32, 320), sound=False)
    facts, _ = video.video(str(path), "video/mp4")
    assert (facts["scrub"]["frameHeight"], facts["scrub"]["frames"]) == (640, 1)


def test_a_file_without_video_is_refused(tmp_path: Path) -> None:
    path = media_files.audio(tmp_path / "tone.m4a", seconds=1, codec="aac")
    with pytest.raises(MediaRefused) as refused:
        video.video(str(path), "audio/mp4")
    assert (refused.value.code, str(refused.value)) == ("MEDIA_UNREADABLE", "The file has no video.")


def test_a_video_over_the_pixel_limit_is_refused_before_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = media_files.video(tmp_path / "clip.mp4", seconds=1, size=(320, 240), sound=False)
    monkeypatch.setattr(video, "MAX_VIDEO_PIXELS", 320 * 240 - 1)  # as if it were over 8192 x 8192
    with pytest.raises(MediaRefused) as refused:
        video.video(str(path), "video/mp4")
    assert refused.value.code == "MEDIA_TOO_LARGE" and "320 x 240" in str(refused.value)


def test_a_cut_off_video_is_refused_as_unreadable(tmp_path: Path) -> None:
    whole = media_files.video(tmp_path / "clip.mp4", seconds=2).read_bytes()
    path = tmp_path / "cut.mp4"
    path.write_bytes(whole[:3000])
    with pytest.raises(MediaRefused) as refused:
        video.video(str(path), "video/mp4")
    assert refused.value.code == "MEDIA_UNREADABLE"
