"""The browser tier: real headless Chromium (Debian's ``chromium``, driven by Playwright with
``executable_path``; nothing downloads a browser) against `cardvault serve` on a free port.

Where Chromium is missing the tier installs it with apt-get (as root, or through sudo without
a password); if that cannot be done it skips, and under CI=true it fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, sync_playwright

from harness.servers import IN_CI

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def _chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def _install_chromium() -> str:
    """Install Debian's chromium; return what went wrong, or ''."""
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if prefix and shutil.which("sudo") is None:
        return "not root and no sudo"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=300"]  # another apt-get (a second tier, cron) may hold the lock
    for command in (
        ["apt-get", *wait, "update", "-q"],
        ["apt-get", *wait, "install", "-y", "-q", "chromium"],
    ):
        result = subprocess.run([*prefix, *command], env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0 and "install" in command:
            return f"{' '.join(command)} failed: {result.stderr.strip()[-500:]}"
    return ""


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = _chromium()
    if path is None:
        problem = _install_chromium()
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
