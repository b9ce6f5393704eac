"""The contract document itself."""

import subprocess
import sys

import yaml

from cardvault.settings import SPEC_PATH


def test_the_spec_validates_as_openapi_3_0() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openapi_spec_validator", "--schema", "3.0", str(SPEC_PATH)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert yaml.safe_load(SPEC_PATH.read_text())["openapi"] == "3.0.3"


def test_every_operation_has_a_camel_case_id_one_tag_and_declares_its_errors() -> None:
    spec = yaml.safe_load(SPEC_PATH.read_text())
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation["operationId"][0].islower() and "." not in operation["operationId"]
            assert len(operation["tags"]) == 1
            assert "500" in operation["responses"], f"{method} {path}"
            if operation.get("security", spec["security"]):
                assert "401" in operation["responses"], f"{method} {path}"
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= set(operation["responses"]), f"{method} {path}"
                schema = operation["requestBody"]["content"]["application/json"]["schema"]
                name = schema["$ref"].rsplit("/", 1)[1]
                assert spec["components"]["schemas"][name]["additionalProperties"] is False


def test_every_link_names_an_existing_operation() -> None:
    spec = yaml.safe_load(SPEC_PATH.read_text())
    ids = {
        op["operationId"] for item in spec["paths"].values() for m, op in item.items() if m != "parameters"
    }
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method == "parameters":
                continue
            for response in operation["responses"].values():
                for link in response.get("links", {}).values():
                    assert link["operationId"] in ids
