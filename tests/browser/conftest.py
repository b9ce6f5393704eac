"""The browser tier: real headless Chromium (Debian's ``chromium``, driven by Playwright with
``executable_path``; nothing downloads a browser) against `cardvault serve` on a free port.

Where Chromium is missing the tier installs it with apt-get (as root, or through sudo without
a password); if that cannot be done it skips, and under CI=true it fails."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, sync_playwright

from harness import debian
from harness.servers import IN_CI

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def _chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = _chromium()
    if path is None:
        problem = debian.install("chromium")
        path = _chromium()
        if path is None:
            problem = problem or "not found after install"
            message = f"browser tier skipped: no chromium, and installing it failed ({problem})"
            if IN_CI:
                pytest.fail(f"CI=true needs Chromium: {message}")
            pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Browser]:
    # Per module, not per session: Playwright's sync API keeps an asyncio loop running in this
    # thread while it is open, and later tests' asyncio.run() would refuse to start.
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path, args=["--no-sandbox"], headless=True
        )
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser, tmp_path: Path) -> Iterator[BrowserContext]:
    """A fresh browser profile (no cookies) per test."""
    made = browser.new_context()
    made.set_default_timeout(15_000)
    yield made
    made.close()
