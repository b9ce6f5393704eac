"""The ``ocr`` stage's rules: which picture of a card is read, or why none is (the stage run
through the pipeline: tests/unit/workers/stages/test_ocr.py)."""

from __future__ import annotations

from typing import Any

import pytest

from cardvault.domain.models import Card
from cardvault.domain.pipeline import ocr


def card(**fields: Any) -> Card:
    return Card(**{"file_object": None, "screenshot_object": None, "file_kind": None, **fields})


@pytest.mark.parametrize(
    ("fields", "page_text", "read"),
    [
        ({"type": "image", "file_object": "o/photo"}, None, ("image", "o/photo")),
        ({"type": "document", "file_object": "o/scan", "file_kind": "pdf"}, "some text", ("pdf", "o/scan")),
        ({"type": "document", "file_object": "o/notes", "file_kind": "office"}, "Minutes", "HAS_TEXT"),
        ({"type": "document", "file_object": "o/data", "file_kind": "archive"}, None, "NO_PICTURE"),
        ({"type": "link", "screenshot_object": "o/shot"}, None, ("image", "o/shot")),
        ({"type": "link", "screenshot_object": "o/shot"}, "  \n", ("image", "o/shot")),
        ({"type": "link", "screenshot_object": "o/shot"}, "The page's own words", "HAS_TEXT"),
        ({"type": "link"}, None, "NO_PICTURE"),  # its capture made no screenshot
    ],
)
def test_the_picture_read_is_the_image_the_pdf_or_a_wordless_pages_screenshot(
    fields: dict[str, Any], page_text: str | None, read: tuple[str, str] | str
) -> None:
    assert ocr.picture_of(card(**fields), page_text) == read


def test_the_result_names_what_read_it() -> None:
    assert ocr.read("words", engine="tesseract 5.5.4", languages=("eng", "deu"), pages=2) == {
        "file_text": "words",
        "ocr_facts": {"engine": "tesseract 5.5.4", "languages": ["eng", "deu"], "pages": 2},
    }
