"""OCR's settings."""

from pathlib import Path

import pytest

from cardvault.settings import Settings
from cardvault.settings.declaring import SettingsError


def test_ocr_is_on_in_english_and_its_languages_and_bounds_can_be_set(tmp_path: Path) -> None:
    ocr = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)}).ocr
    assert (ocr.enabled, ocr.languages, ocr.max_pixels, ocr.seconds, ocr.concurrency) == (
        True,
        ("eng",),
        12_000_000,
        60.0,
        1,
    )
    chosen = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_OCR": "false",
            "CARDVAULT_OCR_LANGUAGES": "eng, deu+fra,eng",
            "CARDVAULT_OCR_MAX_PIXELS": "4000000",
        }
    ).ocr
    assert (chosen.enabled, chosen.languages, chosen.max_pixels) == (False, ("eng", "deu", "fra"), 4_000_000)


@pytest.mark.parametrize("value", ["English", "eng;rm -rf", "e"])
def test_a_language_that_is_not_a_tesseract_name_is_refused_naming_the_variable(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(SettingsError, match="CARDVAULT_OCR_LANGUAGES"):
        Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_OCR_LANGUAGES": value})


def test_the_time_is_bounded_inside_the_stages_limit(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="CARDVAULT_OCR_SECONDS"):
        Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_OCR_SECONDS": "500"})
