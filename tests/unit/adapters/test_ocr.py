"""The OCR engine's adapter, in this process (the stage runs it in the OCR child: test_ocr in
tests/unit/workers/stages): words in reading order, doubtful words and pictures dropped, none
read in a plain picture, large pictures scaled to the bound first, the text cut at 256 KiB, and
which languages are found where."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image

from cardvault.adapters import ocr
from cardvault.adapters.decoder import Decoder
from cardvault.services import OcrChildren
from harness import text_pictures
from tests.ocr_extra import require_ocr


@pytest.fixture
def options() -> dict[str, object]:
    require_ocr()
    folder = ocr.tessdata()
    assert folder is not None
    return {"folder": str(folder), "languages": ["eng"], "min_confidence": 60, "seconds": 30.0}


def test_two_columns_of_paragraphs_are_read_in_order(options: dict[str, object]) -> None:
    page = Image.new("RGB", (1400, 500), "white")
    left = text_pictures.printed(["harbour", "receipt", "invoice", "kitchen"], width=600, size=30)
    right = text_pictures.printed(["museum", "platform", "orange", "library"], width=600, size=30)
    page.paste(left, (0, 0))
    page.paste(right, (760, 0))
    read = ocr.recognise(ocr.bounded(page, 10_000_000), **options)  # type: ignore[arg-type]
    words = read.lower().split()
    assert words.index("harbour") < words.index("kitchen") < words.index("museum") < words.index("library")


def test_noise_gives_no_text(options: dict[str, object]) -> None:
    noise = Image.effect_noise((900, 600), 90).convert("RGB")
    assert ocr.recognise(ocr.bounded(noise, 10_000_000), **options) == ""  # type: ignore[arg-type]


@pytest.mark.parametrize("colour", ["white", (20, 90, 160)])
def test_a_plain_picture_gives_no_text(options: dict[str, object], colour: object) -> None:
    plain = Image.new("RGB", (640, 480), colour)  # type: ignore[arg-type]
    assert ocr.recognise(ocr.bounded(plain, 10_000_000), **options) == ""  # type: ignore[arg-type]


def test_a_large_picture_is_scaled_to_the_bound_before_it_is_read() -> None:
    scaled = ocr.bounded(Image.new("RGB", (8000, 6000), "white"), 12_000_000)
    assert scaled.mode == "L" and scaled.size[0] * scaled.size[1] <= 12_000_000
    assert abs(scaled.size[0] / scaled.size[1] - 8000 / 6000) < 0.01
    small = ocr.bounded(Image.new("RGB", (300, 200), "white"), 12_000_000)
    assert small.size == (300, 200)  # never enlarged


def test_the_text_kept_is_at_most_256_kib_cut_between_characters() -> None:
    kept = ocr.kept("é" * 200_000)
    assert len(kept.encode()) <= ocr.MAX_TEXT_BYTES and set(kept) == {"é"}
    assert ocr.kept("short") == "short"


def test_languages_are_those_whose_files_the_folder_holds(tmp_path: Path) -> None:
    assert ocr.tessdata(str(tmp_path)) is None and ocr.available_languages(None) == ()
    for name in ("eng", "deu", "osd"):
        (tmp_path / f"{name}.traineddata").write_bytes(b"")
    assert ocr.tessdata(str(tmp_path)) == tmp_path
    assert ocr.available_languages(tmp_path) == ("deu", "eng")  # osd detects scripts, reads none
    if ocr.installed():
        assert ocr.usable_languages(["fra", "eng"], str(tmp_path)) == ("eng",)


@pytest.mark.parametrize("seed", [1, 2, 3, 100_001, 100_002, 200_003])
def test_a_small_plain_picture_is_read_as_no_text(options: dict[str, object], seed: int) -> None:
    """Tesseract finds word boxes without text in some plain pictures (tesserocr raises "No text
    returned" for them): they are no words, not a failure of the engine. (The colours are
    harness.faults.storage's pictures'.)"""
    picture = Image.new("RGB", (64, 48), ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    assert ocr.recognise(ocr.bounded(picture, 10_000_000), **options) == ""  # type: ignore[arg-type]


def test_reading_leaves_the_process_environment_as_it_was(
    options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    # OMP_THREAD_LIMIT belongs to the OCR children alone: under it the speech model, in any
    # process that loads it after, hears nothing but "a, a, a".
    monkeypatch.delenv("OMP_THREAD_LIMIT", raising=False)
    monkeypatch.setattr(ocr, "_APIS", {})  # the engine made again, as on a first read
    page = text_pictures.printed(["harbour", "receipt"], width=600, size=30)
    assert "harbour" in ocr.recognise(ocr.bounded(page, 10_000_000), **options).lower()  # type: ignore[arg-type]
    assert "OMP_THREAD_LIMIT" not in os.environ


def test_the_ocr_children_alone_run_with_one_openmp_thread() -> None:
    children = OcrChildren(1, wait=1.0)
    assert children.decoders[0].environment["OMP_THREAD_LIMIT"] == "1"
    assert "OMP_THREAD_LIMIT" not in Decoder().environment
