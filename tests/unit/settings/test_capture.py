"""Link capture's settings."""

from pathlib import Path

from cardvault.settings import Settings


def test_capture_is_on_with_every_output_and_can_be_narrowed(tmp_path: Path) -> None:
    capture = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)}).capture
    assert (capture.enabled, capture.outputs, capture.concurrency, capture.sandbox) == (
        True,
        ("screenshot", "archive", "reader"),
        1,
        True,
    )
    narrowed = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_CAPTURE_OUTPUTS": "screenshot, reader",
            "CARDVAULT_CAPTURE_CONCURRENCY": "2",
            "CARDVAULT_CAPTURE_BROWSER": "/opt/chromium/chrome",
        }
    ).capture
    assert (narrowed.outputs, narrowed.concurrency, narrowed.browser) == (
        ("screenshot", "reader"),
        2,
        "/opt/chromium/chrome",
    )
