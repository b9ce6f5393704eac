"""The OCR tests need the ``ocr`` extra (installed by ``python3 dev.py test``) and Debian's
English language file, which they install with apt-get where it is missing
(harness.text_pictures.ensure_language_files); without them they are skipped, and under
CI=true they fail."""

from __future__ import annotations

import functools

import pytest

from harness import text_pictures
from tests.conftest import IN_CI


@functools.cache
def _problem() -> str:
    return text_pictures.ensure_language_files()


def require_ocr() -> None:
    problem = _problem()
    if not problem:
        return
    if IN_CI:
        pytest.fail(f"CI=true needs OCR: {problem}")
    pytest.skip(f"OCR tests skipped: {problem}")
