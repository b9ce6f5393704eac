"""The contract tier: the real server on a free port, Schemathesis from the spec on disk, every
check and every phase (examples, coverage, fuzzing, stateful through the spec's links)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import fresh_postgres_database

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [str(BIN / "cardvault"), *args], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Start `cardvault serve` and return its base URL and an API key."""
    env = {
        **os.environ,
        "CARDVAULT_DATA_DIR": str(tmp_path),
        "CARDVAULT_VALIDATE_RESPONSES": "true",
        "CARDVAULT_DATABASE_URL": "",
    }
    workers = "1"
    if request.param == "postgresql":
        env["CARDVAULT_DATABASE_URL"] = fresh_postgres_database(
            "cardvault_contract", "PostgreSQL contract tier"
        )
        workers = "2"  # production shape: several API processes on one database
    _cli(env, "migrate")
    _cli(env, "accounts", "create", "contract")
    key = _cli(env, "keys", "create", "contract")
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [str(BIN / "cardvault"), "serve", "--port", str(port), "--workers", workers],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("the server did not start:\n" + (tmp_path / "server.log").read_text())
            time.sleep(0.2)
        yield base, key
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


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
        capture_output=True,
        text=True,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    # The closing line names failures when there are any; warnings (such as random ids that
    # mostly hit 404) are reported but are not failures.
    assert re.search(r"=+ (No issues found|\d+ warnings?) in ", output), output[-5000:]
