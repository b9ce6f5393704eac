"""Link capture in headless Chromium: the ``capture`` stage's settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cardvault.settings.declaring import read, setting
from cardvault.settings.kinds import FLAG, TEXT, WHOLE, at_most, choices

CAPTURE_OUTPUTS = ("screenshot", "archive", "reader")
CAPTURE_MAX_SECONDS = 180.0  # inside the stage's own time limit (cardvault.domain.pipeline.table)


@dataclasses.dataclass(frozen=True)
class CaptureSettings:
    """Link capture in headless Chromium (the ``capture`` stage; docs/files-and-capture.md,
    "Link capture")."""

    enabled: bool = setting(  # off: the capture stage is skipped, CAPTURE_OFF
        "CARDVAULT_CAPTURE",
        FLAG,
        True,
        "capture link pages in headless Chromium (the `capture` stage: screenshot, archive, reader "
        "view); `false`, or with no Chromium installed: the stage is skipped (`CAPTURE_OFF`, "
        "`NO_BROWSER`)",
    )
    browser: str | None = setting(  # None: found on PATH (none: NO_BROWSER)
        "CARDVAULT_CAPTURE_BROWSER",
        TEXT,
        None,
        "Chromium's program (unset: `/usr/lib/chromium/chromium`, else `chromium` or "
        "`chromium-browser` on `PATH`)",
        shown="found",
    )
    outputs: tuple[str, ...] = setting(
        "CARDVAULT_CAPTURE_OUTPUTS",
        choices(CAPTURE_OUTPUTS, "screenshot"),
        CAPTURE_OUTPUTS,
        "what a capture keeps: the screenshot always, the archive and the reader view if listed",
    )
    seconds: float = setting(
        "CARDVAULT_CAPTURE_SECONDS",
        at_most(CAPTURE_MAX_SECONDS),
        30.0,
        "one capture's time: navigation, load, settle, scrolling and outputs (`CAPTURE_TIMEOUT` "
        "past it, retried)",
        unit="seconds",
    )
    max_height: int = setting(
        "CARDVAULT_CAPTURE_MAX_HEIGHT",
        WHOLE,
        20_000,
        "how far down a page is scrolled to draw its lazy content; an endless page stops there",
        unit="px",
    )
    archive_bytes: int = setting(
        "CARDVAULT_CAPTURE_ARCHIVE_BYTES",
        WHOLE,
        25 * 1024 * 1024,
        "a larger archive is left out (the screenshot and reader view are kept)",
        unit="bytes",
    )
    memory_mb: int = setting(
        "CARDVAULT_CAPTURE_MEMORY_MB",
        WHOLE,
        1024,
        "the browser's processes together; past it the capture fails (`PAGE_TOO_LARGE`) and the "
        "browser is started again",
        unit="MB",
    )
    concurrency: int = setting(  # per worker process
        "CARDVAULT_CAPTURE_CONCURRENCY",
        WHOLE,
        1,
        "captures at once per worker process (each worker process runs one browser)",
        unit="captures",
    )
    sandbox: bool = setting(  # Chromium's sandbox (always off as root, with a warning)
        "CARDVAULT_CAPTURE_SANDBOX",
        FLAG,
        True,
        "Chromium's own sandbox; always off as root (Chromium refuses it there), with a warning in "
        "the worker's log",
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CaptureSettings:
        values, _ = read(cls, env)
        return cls(**values)
