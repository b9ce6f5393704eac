"""`python3 dev.py compat`: whether the working spec keeps what `/v1` promises (the spec's
info.description, "Compatibility") to clients built on the last released spec.

The last released spec is the file of openapi/released/ with the highest version
(`cardvault-<version>.yaml`), so a checkout without history can be checked. api-smart-diff, a
maintained OpenAPI diff tool installed from npm by tests/sdk/package-lock.json, compares the two
and classifies every change; each change it calls breaking is printed, and any makes the exit
status 1. The working spec's `info.version` must be semantic versioning, of the released major
and not lower than the released version. Usage:

    python -m harness.compat [--spec PATH] [--released PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness import npm_tools

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "openapi" / "cardvault.yaml"
RELEASED = ROOT / "openapi" / "released"
DRIVER = Path(__file__).with_name("compat.cjs")
# semver.org's grammar: MAJOR.MINOR.PATCH, an optional pre-release and build metadata.
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)


def version_of(text: str) -> tuple[int, int, int] | None:
    """MAJOR, MINOR and PATCH of a semantic version; None when `text` is none."""
    match = SEMVER.match(text)
    return None if match is None else (int(match[1]), int(match[2]), int(match[3]))


def last_released() -> Path:
    """The released spec with the highest version."""
    files = RELEASED.glob("cardvault-*.yaml")
    found = {version_of(path.stem.removeprefix("cardvault-")): path for path in files}
    versions = sorted(v for v in found if v is not None)
    if not versions:
        raise SystemExit(f"no released spec (cardvault-<version>.yaml) in {RELEASED}")
    return found[versions[-1]]


def version_problems(released: dict[str, Any], working: dict[str, Any]) -> list[str]:
    was, now = str(released["info"]["version"]), str(working["info"]["version"])
    old, new = version_of(was), version_of(now)
    if new is None:
        return [f"info.version {now!r} is not semantic versioning (MAJOR.MINOR.PATCH)"]
    if old is not None and (new[0] != old[0] or new < old):
        return [f"info.version {now} must keep the released major and not be lower than {was}"]
    return []


def changes(released: dict[str, Any], working: dict[str, Any]) -> list[dict[str, Any]]:
    """Every change api-smart-diff finds from `released` to `working`, as it classifies them."""
    modules = npm_tools.install()
    with tempfile.TemporaryDirectory() as where:
        files = [Path(where) / "released.json", Path(where) / "working.json"]
        for file, document in zip(files, (released, working), strict=True):
            file.write_text(json.dumps(document, default=str))  # YAML reads a bare date as a date
        command = [shutil.which("node") or "node", str(DRIVER), str(modules), *map(str, files)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"api-smart-diff failed:\n{result.stderr[-20000:]}")
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def describe(change: dict[str, Any]) -> str:
    where = ".".join(change["path"])
    values = [
        f"{side} {json.dumps(change[side])}" for side in ("before", "after") if change[side] is not None
    ]
    return " ".join([f"breaking: {change['action']} {where}", *values])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=SPEC, help="the working spec (openapi/cardvault.yaml)")
    parser.add_argument("--released", type=Path, help="the released spec (the highest of openapi/released/)")
    arguments = parser.parse_args(argv)
    released_path = arguments.released or last_released()
    released = yaml.safe_load(released_path.read_text())
    working = yaml.safe_load(arguments.spec.read_text())
    try:
        found = changes(released, working)
    except npm_tools.NpmMissing as missing:
        print(f"compat: {missing}", file=sys.stderr)
        return 2
    problems = version_problems(released, working)
    problems += [describe(change) for change in found if change["type"] == "breaking"]
    for line in problems:
        print(line)
    counts = {kind: sum(c["type"] == kind for c in found) for kind in sorted({c["type"] for c in found})}
    summary = ", ".join(f"{count} {kind}" for kind, count in counts.items()) or "no changes"
    shown = f"{arguments.spec.name} {working['info']['version']}"
    print(f"compat: {shown} against released {released['info']['version']}: {summary}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
