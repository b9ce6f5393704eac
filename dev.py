#!/usr/bin/env python3
"""Run Card Vault from a fresh clone with nothing but Python 3.11+.

    python3 dev.py serve [--port P]   run the service on the embedded default (SQLite, ./var)
    python3 dev.py test               run the whole test suite (unit on SQLite and PostgreSQL,
                                      contract); any extra arguments go to pytest
    python3 dev.py compat             compare openapi/cardvault.yaml with the last released spec
                                      (openapi/released/) and fail on any breaking change; needs
                                      Node.js and npm (the diff tool is api-smart-diff, pinned by
                                      tests/sdk/package-lock.json); --spec/--released pick others

Each creates .venv and installs the project into it first (again whenever pyproject.toml changes).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".cardvault-installed"


def ensure_environment() -> None:
    if sys.version_info < (3, 11):
        sys.exit("Card Vault needs Python 3.11 or newer.")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not (BIN / "python").exists():
        print("Creating .venv ...", flush=True)
        venv.create(VENV, with_pip=True)
    print("Installing Card Vault and its test tools into .venv ...", flush=True)
    subprocess.run(
        [str(BIN / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[test,asr,ocr]"],
        check=True,
    )
    STAMP.write_text(wanted)


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in {"serve", "test", "compat"}:
        print(__doc__)
        return 2
    ensure_environment()
    command, rest = sys.argv[1], sys.argv[2:]
    os.chdir(ROOT)
    if command == "serve":
        return subprocess.call([str(BIN / "cardvault"), "serve", *rest])
    if command == "compat":
        return subprocess.call([str(BIN / "python"), "-m", "harness.compat", *rest])
    # Every core runs tests (each xdist worker has its own databases, ports and directories);
    # `-n 0` on the command line runs them in this process instead. Two workers per core ran
    # the suite in 719 s instead of 834 on two cores, but two fresh-clone runs each failed a
    # test whose load could not keep up (a heartbeat, a writers' throughput): one per core.
    parallel = [] if any(arg.startswith(("-n", "--numprocesses")) for arg in rest) else ["-n", "auto"]
    return subprocess.call([str(BIN / "python"), "-m", "pytest", *parallel, "--dist", "loadgroup", *rest])


if __name__ == "__main__":
    sys.exit(main())
