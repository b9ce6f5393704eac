"""The subtitle reader (cardvault.adapters.media.subtitles), called in this process: subtitle
track choice, and a caption file's cues."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardvault.adapters.media import subtitles
from harness import media_files


def test_the_english_track_is_chosen_else_the_first(tmp_path: Path) -> None:
    plain = media_files.video(tmp_path / "clip.mkv", sound=False)
    french = media_files.with_subtitles(
        tmp_path / "fr.mkv", plain, "1\n00:00:01,000 --> 00:00:02,000\nBonjour\n\n", "fra"
    )
    assert subtitles.subtitles(str(french), "video/x-matroska") == {"text": "Bonjour", "language": "fra"}
    assert subtitles.subtitles(str(plain), "video/x-matroska") == {"text": None, "language": None}


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
    read = subtitles.captions(str(vtt), "vtt")
    assert read["text"].splitlines()[:2] == ["Hello there now", "line 0"]
    assert read["cues"] == 31


def test_a_caption_files_cues_are_all_counted_past_the_transcripts_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subtitles, "TRANSCRIPT_CHARS", 40)
    srt = tmp_path / "c.srt"
    srt.write_text(
        "".join(f"{n + 1}\n00:00:{n:02},000 --> 00:00:{n:02},500\nline number {n}\n\n" for n in range(50)),
        encoding="utf-8",
    )
    read = subtitles.captions(str(srt), "srt")
    assert read["cues"] == 50 and len(read["text"]) <= 40
