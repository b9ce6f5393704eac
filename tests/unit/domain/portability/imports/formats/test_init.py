"""Times in seconds (or what a writer meant by them)."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import seconds


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("1709302567", 1709302567000),
        (1709302567, 1709302567000),
        ("1709302567482", 1709302567482),  # milliseconds
        ("1709302567482123", 1709302567482),  # microseconds
        ("0", None),
        ("", None),
        (None, None),
        ("-5", None),
        ("nan", None),
        ("inf", None),
        ("soon", None),
        ("1e400", None),
    ],
)
def test_seconds_are_read_as_milliseconds(value: str | int | None, ms: int | None) -> None:
    assert seconds(value) == ms
