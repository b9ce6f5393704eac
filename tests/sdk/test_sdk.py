"""The SDK tier: what client teams generate from openapi/cardvault.yaml must be strong and must
work. Redocly lints the spec; openapi-python-client generates the Python SDK (any warning
fails), mypy checks a scenario written against it, and the scenario runs every operation
against the real server; openapi-typescript generates the TypeScript types and `tsc --strict`
checks a TypeScript scenario. Generated code goes to temporary directories only.

The npm tools are pinned by tests/sdk/package-lock.json and installed with `npm ci` on first
use (again when the lock file changes). Without Node.js the TypeScript and lint checks skip,
and fail under CI=true."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.servers import BIN, running_server, server_env
from tests.conftest import IN_CI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPEC = ROOT / "openapi" / "cardvault.yaml"
TOOLS = HERE / "node_modules" / ".bin"
STAMP = HERE / "node_modules" / ".cardvault-lock"


def run(*command: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run a command; fail the test with its output unless it succeeds."""
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=environment, capture_output=True, text=True, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{command[0]} failed:\n{output[-20000:]}"
    return output


@pytest.fixture(scope="session")
def npm_tools() -> Path:
    """The pinned npm tools, installed from the lock file when it changed."""
    npm = shutil.which("npm")
    if npm is None:
        message = "the SDK tier's TypeScript and lint checks need Node.js and npm"
        if IN_CI:
            pytest.fail(f"CI=true: {message}")
        pytest.skip(message)
    lock = (HERE / "package-lock.json").read_text()
    if not STAMP.exists() or STAMP.read_text() != lock:
        run(npm, "ci", "--no-audit", "--no-fund", cwd=HERE)
        STAMP.write_text(lock)
    return TOOLS


def test_the_spec_passes_redocly_recommended_lint_without_a_warning(npm_tools: Path) -> None:
    output = run(npm_tools / "redocly", "lint", SPEC, "--format", "json", "--config", ROOT / "redocly.yaml")
    start = re.search(r'\{\s*"totals"', output)
    assert start is not None, output
    report, _ = json.JSONDecoder().raw_decode(output, start.start())
    problems = [(p["ruleId"], p["message"]) for p in report["problems"]]
    assert report["totals"]["errors"] == report["totals"]["warnings"] == 0, problems


@pytest.fixture(scope="session")
def python_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python SDK generated into a temporary directory (package `cardvault_client`)."""
    where = tmp_path_factory.mktemp("python-sdk")
    output = run(
        BIN / "openapi-python-client",
        "generate",
        "--path",
        SPEC,
        "--output-path",
        where / "cardvault_client",
        "--meta",
        "none",
    )
    assert "warning" not in output.lower(), output
    return where


def test_the_python_scenario_type_checks_against_the_generated_sdk(python_sdk: Path) -> None:
    config = python_sdk / "mypy.ini"
    # The generated package is the generator's code; the scenario is what we hold to strict.
    config.write_text(
        "[mypy]\nstrict = True\ncache_dir = .mypy_cache\n[mypy-cardvault_client.*]\nignore_errors = True\n"
    )
    run(
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        config,
        HERE / "scenario.py",
        cwd=python_sdk,
        env={"MYPYPATH": str(python_sdk)},
    )


def test_the_python_scenario_runs_every_operation_through_the_generated_sdk(
    python_sdk: Path, tmp_path: Path
) -> None:
    with running_server(server_env(tmp_path), tmp_path) as (base, key):
        output = run(sys.executable, HERE / "scenario.py", base, key, env={"PYTHONPATH": str(python_sdk)})
    assert "scenario passed" in output


def test_the_typescript_scenario_type_checks_against_the_generated_types(
    npm_tools: Path, tmp_path: Path
) -> None:
    for name in ("scenario.ts", "tsconfig.json"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "node_modules").symlink_to(HERE / "node_modules")
    run(npm_tools / "openapi-typescript", SPEC, "-o", tmp_path / "schema.d.ts")
    run(npm_tools / "tsc", "-p", tmp_path / "tsconfig.json", cwd=tmp_path)


def test_the_python_scenario_calls_every_operation_of_the_spec() -> None:
    spec = yaml.safe_load(SPEC.read_text())
    operations = {
        re.sub(r"(?<!^)(?=[A-Z])", "_", operation["operationId"]).lower()
        for item in spec["paths"].values()
        for method, operation in item.items()
        if method != "parameters"
    }
    scenario = (HERE / "scenario.py").read_text()
    called = set(re.findall(r"\b([a-z_]+)\.sync(?:_detailed)?\(", scenario))
    assert operations == called, f"not called: {sorted(operations - called)}"
