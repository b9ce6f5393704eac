"""`python3 dev.py compat`: the working spec keeps what the last released one promised, and a
copy that breaks a client in each of the four ways the promise names is refused, with the break
reported. The diff tool (api-smart-diff) comes from the SDK tier's pinned npm tools."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.compat import SPEC, last_released
from harness.npm_tools import NpmMissing
from harness.npm_tools import install as npm_tools_install
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]

Spec = dict[str, Any]
JSON = "content.application/json.schema"


@pytest.fixture(scope="module", autouse=True)
def diff_tool() -> None:
    try:
        npm_tools_install()
    except NpmMissing as missing:
        if IN_CI:
            pytest.fail(f"CI=true: {missing}")
        pytest.skip(str(missing))


def compat(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harness.compat", *map(str, arguments)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_compat_passes_on_the_working_spec_through_dev_py() -> None:
    result = subprocess.run(
        [sys.executable, ROOT / "dev.py", "compat"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "breaking:" not in result.stdout and "compat: cardvault.yaml" in result.stdout


def test_the_working_version_is_semver_and_the_released_spec_is_its_base() -> None:
    working = yaml.safe_load(SPEC.read_text())["info"]["version"]
    released = yaml.safe_load(last_released().read_text())["info"]["version"]
    assert working.split(".")[0] == released.split(".")[0] == "1"
    assert tuple(map(int, working.split("."))) >= tuple(map(int, released.split(".")))


def remove_operation(spec: Spec) -> str:
    del spec["paths"]["/webhooks/{webhookId}/test"]["post"]
    return "breaking: remove paths./webhooks/{webhookId}/test.post"


def remove_response_field(spec: Spec) -> str:
    webhook = spec["components"]["schemas"]["Webhook"]
    del webhook["properties"]["pausedUntil"]
    webhook["required"].remove("pausedUntil")
    return f"breaking: remove paths./webhooks/{{webhookId}}.get.responses.200.{JSON}.properties.pausedUntil"


def require_new_request_field(spec: Spec) -> str:
    create = spec["components"]["schemas"]["WebhookCreate"]
    create["properties"]["label"] = {"type": "string", "description": "A new field."}
    create["required"].append("label")
    return f'breaking: add paths./webhooks.post.requestBody.{JSON}.required.2 after "label"'


def narrow_enum(spec: Spec) -> str:
    spec["components"]["schemas"]["ImportFormat"]["enum"].remove("omnivore")
    return (
        f'breaking: remove paths./imports.post.requestBody.{JSON}.properties.format.enum.8 before "omnivore"'
    )


@pytest.mark.parametrize(
    "breaks", [remove_operation, remove_response_field, require_new_request_field, narrow_enum]
)
def test_compat_fails_on_a_copy_that_breaks_a_client_and_reports_the_break(
    breaks: Callable[[Spec], str], tmp_path: Path
) -> None:
    spec = copy.deepcopy(yaml.safe_load(SPEC.read_text()))
    expected = breaks(spec)
    broken = tmp_path / "cardvault.yaml"
    broken.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = compat("--spec", broken)
    assert result.returncode == 1, result.stdout + result.stderr
    assert expected in result.stdout.splitlines(), result.stdout


def test_compat_refuses_a_version_that_is_not_semver_or_goes_back(tmp_path: Path) -> None:
    for version, problem in (
        ("1.1", "is not semantic versioning"),
        ("0.9.0", "must keep the released major"),
    ):
        spec = yaml.safe_load(SPEC.read_text())
        spec["info"]["version"] = version
        changed = tmp_path / f"{version}.yaml"
        changed.write_text(yaml.safe_dump(spec, sort_keys=False))
        result = compat("--spec", changed)
        assert result.returncode == 1 and problem in result.stdout, result.stdout + result.stderr
