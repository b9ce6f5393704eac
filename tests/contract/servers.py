"""Start `cardvault serve` as a real process on a free loopback port, for the tests that need
the HTTP server itself."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(env: dict[str, str], *args: str) -> str:
    """Run a `cardvault` command and return what it printed."""
    result = subprocess.run(
        [str(BIN / "cardvault"), *args], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def server_env(tmp_path: Path, database_url: str = "") -> dict[str, str]:
    """The environment of a server with its own data directory (SQLite unless a URL is given)."""
    env = {
        **os.environ,
        "CARDVAULT_DATA_DIR": str(tmp_path),
        "CARDVAULT_VALIDATE_RESPONSES": "true",
        "CARDVAULT_DATABASE_URL": database_url,
    }
    env.pop("CARDVAULT_PUBLIC_URL", None)
    return env


@contextmanager
def running_server(env: dict[str, str], tmp_path: Path, workers: int = 1) -> Iterator[tuple[str, str]]:
    """Start `cardvault serve` with an account of its own; yield its base URL and an API key."""
    cli(env, "migrate")
    cli(env, "accounts", "create", "tester")
    key = cli(env, "keys", "create", "tester")
    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(BIN / "cardvault"), "serve", "--port", str(port), "--workers", str(workers)],
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
                    pytest.fail("the server did not start:\n" + log_path.read_text())
                time.sleep(0.2)
            yield base, key
        finally:
            process.terminate()
            process.wait(timeout=30)
