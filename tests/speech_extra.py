"""The speech tests need the ``asr`` extra (installed by ``python3 dev.py test``): without it
they are skipped, and under CI=true they fail."""

from __future__ import annotations

import pytest

from cardvault.adapters import speech
from tests.conftest import IN_CI


def require_speech() -> None:
    if speech.installed():
        return
    message = "the asr extra is not installed (pip install -e '.[asr]')"
    if IN_CI:
        pytest.fail(f"CI=true needs speech recognition: {message}")
    pytest.skip(message)
