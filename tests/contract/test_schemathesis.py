"""The contract tier: the real server on a free port, Schemathesis from the spec on disk, every
check and every phase (examples, coverage, fuzzing, stateful through the spec's links)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.servers import BIN, redis_server, running_server, server_env
from tests.conftest import fresh_postgres_database

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Start `cardvault serve` and return its base URL and an API key."""
    if request.param == "postgresql":
        url = fresh_postgres_database("cardvault_contract", "PostgreSQL contract tier")
        # Production's shape: several API processes on one database, a worker process, and
        # Redis between them (the broker and the rate limits).
        with redis_server(tmp_path) as (redis_url, _):
            env = {**server_env(tmp_path, url), "CARDVAULT_REDIS_URL": redis_url}
            with running_server(env, tmp_path, workers=2) as started:
                yield started
    else:
        with running_server(server_env(tmp_path), tmp_path) as started:
            yield started


def test_the_server_honours_its_contract(server: tuple[str, str], tmp_path: Path) -> None:
    base, key = server
    result = subprocess.run(
        [
            str(BIN / "schemathesis"),
            "run",
            str(ROOT / "openapi" / "cardvault.yaml"),
            "--url",
            base,
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "-H",
            f"Authorization: Bearer {key}",
            "--report",
            "junit",
            "--report-dir",
            str(tmp_path / "reports"),
        ],
        cwd=ROOT,
        env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.contract.hooks"},
        capture_output=True,
        text=True,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    # The closing line names failures when there are any; warnings (such as random ids that
    # mostly hit 404) are reported but are not failures.
    assert re.search(r"=+ (No issues found|\d+ warnings?) in ", output), output[-5000:]
