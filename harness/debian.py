"""Installing a Debian package the tests need and the machine lacks (Chromium for the browser
tier, Tesseract's language files for OCR): apt-get as root, or through sudo without a password."""

from __future__ import annotations

import os
import shutil
import subprocess


def install(package: str) -> str:
    """Install ``package`` with apt-get; return what went wrong, or ''."""
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if prefix and shutil.which("sudo") is None:
        return "not root and no sudo"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=300"]  # another apt-get (a second tier, cron) may hold the lock
    for command in (
        ["apt-get", *wait, "update", "-q"],
        ["apt-get", *wait, "install", "-y", "-q", package],
    ):
        result = subprocess.run([*prefix, *command], env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0 and "install" in command:
            return f"{' '.join(command)} failed: {result.stderr.strip()[-500:]}"
    return ""
