"""Start `cardvault serve` as a real process on a free loopback port, for the tests that need
the HTTP server itself."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import redis

BIN = Path(sys.executable).parent
IN_CI = os.environ.get("CI", "").lower() == "true"


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
        # Room for the fuzzer's many tag operations; markCardDone keeps its default (60 a
        # minute), so stateful runs meet 429 too.
        "CARDVAULT_RATE_LIMIT_TAG_OPERATIONS": "600/minute",
    }
    env.pop("CARDVAULT_PUBLIC_URL", None)
    return env


@contextmanager
def redis_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Redis server of the test's own on a free port (which the test may stop); yield its URL
    and process. Skipped without redis-server, or failed under CI=true."""
    server = shutil.which("redis-server")
    if server is None:
        if IN_CI:
            pytest.fail("CI=true needs redis-server on PATH")
        pytest.skip("no redis-server on PATH")
    port = free_port()
    process = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail("redis-server did not start")
                time.sleep(0.05)
        yield url, process
    finally:
        process.kill()
        process.wait()


@contextmanager
def running_server(env: dict[str, str], tmp_path: Path, workers: int = 1) -> Iterator[tuple[str, str]]:
    """Start `cardvault serve` with an account of its own (and, with CARDVAULT_REDIS_URL, a
    `cardvault worker` beside it, as in production); yield its base URL and an API key."""
    cli(env, "migrate")
    cli(env, "accounts", "create", "tester")
    key = cli(env, "keys", "create", "tester")
    with serving(
        env, tmp_path / "server.log", workers=workers, worker=bool(env.get("CARDVAULT_REDIS_URL"))
    ) as base:
        yield base, key


@contextmanager
def serving(env: dict[str, str], log_path: Path, *, workers: int = 1, worker: bool = False) -> Iterator[str]:
    """Run `cardvault serve` (and a `cardvault worker`) on a migrated database until it answers;
    yield its base URL."""
    port = free_port()
    with log_path.open("w") as log:
        command = [str(BIN / "cardvault"), "serve", "--port", str(port), "--workers", str(workers)]
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        background = (
            subprocess.Popen(
                [str(BIN / "cardvault"), "worker"], env=env, stdout=log, stderr=subprocess.STDOUT
            )
            if worker
            else None
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
            yield base
        finally:
            for started in (process, background):
                if started is not None:
                    started.terminate()
                    started.wait(timeout=30)
