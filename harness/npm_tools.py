"""The npm tools the SDK tier and `python3 dev.py compat` run (Redocly, openapi-typescript,
TypeScript, api-smart-diff), pinned by tests/sdk/package-lock.json and installed into
tests/sdk/node_modules with `npm ci` on first use, and again whenever the lock file changes."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tests" / "sdk"
NODE_MODULES = PACKAGE / "node_modules"
STAMP = NODE_MODULES / ".cardvault-lock"


class NpmMissing(RuntimeError):
    """Node.js and npm are not on PATH."""


def install() -> Path:
    """The pinned tools' node_modules, installed from the lock file when it changed."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise NpmMissing("Node.js and npm are needed (the SDK tier's TypeScript and lint checks, compat)")
    lock = (PACKAGE / "package-lock.json").read_text()
    # One installer at a time: the suite's workers (and `dev.py compat` beside them) may all
    # ask at once, and two `npm ci` in one directory break each other's files.
    with (PACKAGE / ".npm-install.lock").open("w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not STAMP.exists() or STAMP.read_text() != lock:
            result = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=PACKAGE,
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"npm ci failed:\n{(result.stdout + result.stderr)[-20000:]}")
            STAMP.write_text(lock)
    return NODE_MODULES
