"""The capture browser holds none of the worker's secrets: with a secret key, database and Redis
URLs with passwords, storage and AI keys in the worker's environment, a capture runs, and the
environments of the Playwright driver and of every Chromium process under it (read from
``/proc/<pid>/environ``) hold none of them, and no variable outside the allowlist. The capture's
processes are told from the others under this process (a decoder child or a server an earlier
test of this worker left running has an environment of its own) by the browser's marker: the
marked processes' parent is the driver, and the driver's descendants are Chromium's."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardvault.adapters.capture import CaptureBrowser, Limits, environment, find_browser
from cardvault.adapters.fetcher import Fetcher
from harness.servers import page_server

SECRETS = {
    "CARDVAULT_SECRET_KEY": "secret-key-8d1f0c",
    "CARDVAULT_DATABASE_URL": "postgresql://vault:db-password-51aa@db.internal/cardvault",
    "CARDVAULT_REDIS_URL": "redis://:redis-password-7e2b@redis.internal:6379/0",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-c0ffee",
    "CARDVAULT_AI_API_KEY": "ai-key-b4d5e6",
}


def _parents() -> dict[int, int]:
    """Each process's parent, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # (it ended meanwhile)
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _descendants(pid: int, parents: dict[int, int]) -> list[int]:
    """Every process under ``pid``."""
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _capture_processes(marker: str) -> list[int]:
    """The capture's driver (the parent of the processes with the browser's ``marker``) and
    every process under it, of those under this one."""
    parents = _parents()
    ours = _descendants(os.getpid(), parents)
    drivers = {parents[pid] for pid in ours if (env := _environment(pid)) and marker in env["<cmdline>"]}
    return [*drivers, *(pid for driver in drivers for pid in _descendants(driver, parents))]


def _environment(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    pairs = (item.decode("utf-8", "replace").partition("=") for item in raw.split(b"\0") if item)
    return {"<cmdline>": command.decode("utf-8", "replace"), **{name: value for name, _, value in pairs}}


@pytest.fixture
def secret_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    yield


def test_neither_the_driver_nor_any_chromium_process_holds_a_secret(
    chromium_path: str, secret_worker: None
) -> None:
    processes: dict[int, dict[str, str]] = {}
    browser: CaptureBrowser | None = None

    def seen_while_the_page_loads() -> tuple[int, dict[str, str], bytes]:
        assert browser is not None
        found = _capture_processes(browser._marker)
        processes.update({pid: env for pid in found if (env := _environment(pid))})
        return 200, {"Content-Type": "text/plain"}, b""

    with page_server() as pages:
        pages.routes["/tides"] = (
            200,
            {"Content-Type": "text/html"},
            b"<title>Tides</title><p>High water<script src='/seen'></script>",
        )
        pages.routes["/seen"] = seen_while_the_page_loads
        browser = CaptureBrowser(
            executable=find_browser() or chromium_path,
            fetcher=Fetcher(ports=(pages.port,), allow_loopback=True),
            limits=Limits(seconds=10),
            sandbox=False,
        )
        try:
            assert browser.capture(pages.url("/tides"), wait=5).title == "Tides"
        finally:
            browser.close()
    drivers = [env for env in processes.values() if "run-driver" in env["<cmdline>"]]
    chromiums = [env for env in processes.values() if browser._marker in env["<cmdline>"]]
    assert drivers and chromiums, processes  # (what the test reads is there)
    renderers = [env for env in processes.values() if "--type=renderer" in env["<cmdline>"]]
    assert renderers  # the processes that run the page's code
    leaked = {
        (env["<cmdline>"][:60], name)
        for env in processes.values()
        for name, value in env.items()
        if name != "<cmdline>" and (name in SECRETS or any(secret in value for secret in SECRETS.values()))
    }
    assert leaked == set()
    # Chromium writes its process titles over its environment's memory: what still reads as a
    # variable's name there is checked, with all of the driver's.
    names = {name for env in drivers for name in env} | {
        name for env in processes.values() for name in env if re.fullmatch("[A-Za-z_][A-Za-z0-9_]*", name)
    }
    assert {name for name in names if name != "<cmdline>" and not environment.allowed(name)} == set()
