"""The SDK tier: what client teams generate from openapi/cardvault.yaml must be strong and must
work. Redocly lints the spec; openapi-python-client generates the Python SDK (any warning
fails, and so does any model or enum member whose name the generator made up), mypy checks a
scenario written against it, and the scenario runs every operation
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

from harness.npm_tools import NpmMissing
from harness.npm_tools import install as npm_tools_install
from harness.servers import BIN, running_server, server_env
from tests.conftest import IN_CI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPEC = ROOT / "openapi" / "cardvault.yaml"


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
    try:
        return npm_tools_install() / ".bin"
    except NpmMissing as missing:
        if IN_CI:
            pytest.fail(f"CI=true: {missing}")
        pytest.skip(str(missing))


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


# What a generator makes up when the spec does not name a thing: `Type1`, `Type2Type1` for the
# branches of a union it built itself (a nullable enum listing `null`), `Response200` for an inline
# response schema, `VALUE_13` for an enum value that is no identifier.
_MADE_UP_MODEL = re.compile(r"Type\d+$|Response\d{3}")
_MADE_UP_MEMBER = re.compile(r"^\s+(VALUE_\d+)\s*=", re.MULTILINE)


def made_up_names(package: Path) -> list[str]:
    """The generated models and enum members of `package` whose names the generator made up."""
    found: list[str] = []
    for module in sorted((package / "models").glob("*.py")):
        source = module.read_text()
        for name in re.findall(r"^class (\w+)\b", source, re.MULTILINE):
            if _MADE_UP_MODEL.search(name):
                found.append(f"model {name}")
        found += [f"{module.stem}.{member}" for member in _MADE_UP_MEMBER.findall(source)]
    return found


def test_every_generated_python_model_and_enum_member_has_a_name_the_spec_gave(python_sdk: Path) -> None:
    assert (python_sdk / "cardvault_client" / "models").is_dir()
    assert made_up_names(python_sdk / "cardvault_client") == []


def test_made_up_names_finds_what_a_generator_makes_up(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.py").write_text("class WebhookDisabledReasonType2Type1(StrEnum):\n    USER = 'USER'\n")
    (models / "b.py").write_text("class GetHealthResponse200:\n    pass\n")
    (models / "c.py").write_text(
        "class WebhookEventFilter(StrEnum):\n    CARD_CREATED = 'card.created'\n    VALUE_13 = '*'\n"
    )
    (models / "d.py").write_text("class Webhook:\n    disabled_reason: WebhookDisabledReason\n")
    assert made_up_names(tmp_path) == [
        "model WebhookDisabledReasonType2Type1",
        "model GetHealthResponse200",
        "c.VALUE_13",
    ]


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
