"""Fault scenarios: real `cardvault serve` and `cardvault worker` processes, with clients
sending requests while a component they need fails (a Redis, PostgreSQL or S3 server stopped,
the data disk full, a process killed), then comes back. Each scenario returns an Outcome: the
requests sent, the answers by status and code, the answers that should never be (a 500, a
body other than the error body of a passing fault, a request that hung), the acknowledged
writes lost, and how many seconds the service took to recover once the fault ended.

The fault tests (tests/faults) run every scenario small and assert on its Outcome;
`bench/bench_faults.py` runs them larger and prints the table.

A passing fault is answered 503 with the error body, code ``SERVICE_BUSY`` or
``SERVICE_UNAVAILABLE`` and ``retryAt``. Only the process-kill scenario also allows a dropped
connection (a process killed while it held the request cannot answer it)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

from cardvault.domain.auth import accounts, keys
from cardvault.domain.database import open_database
from cardvault.settings import Settings
from harness.servers import BIN, PageServer, free_port, server_env, stop

PASSING_CODES = frozenset({"SERVICE_BUSY", "SERVICE_UNAVAILABLE"})
HANG_SECONDS = 30.0  # a request unanswered this long has hung
PAUSE_AFTER_503 = 0.05  # a client's pause after a passing fault's answer (it does not spin)


@dataclass
class Outcome:
    """What a scenario saw."""

    fault: str
    sent: int = 0
    answers: Counter[str] = field(default_factory=Counter)  # "200", "503 SERVICE_UNAVAILABLE", ...
    bad: list[str] = field(default_factory=list)  # answers that must never be
    acknowledged: list[str] = field(default_factory=list)  # each acknowledged write's mark
    lost: list[str] = field(default_factory=list)  # acknowledged writes not found afterwards
    unsettled: list[str] = field(default_factory=list)  # jobs neither finished nor failed with a code
    recover_seconds: float = math.nan  # fault over -> the first write acknowledged again
    refused_after: list[str] = field(default_factory=list)  # faults met by requests sent after it
    settle_seconds: float = math.nan  # fault over -> every job started has ended
    facts: dict[str, object] = field(default_factory=dict)  # what else the scenario counted

    def row(self) -> dict[str, object]:
        """The Outcome as one line of the bench's table."""
        return {
            "fault": self.fault,
            "sent": self.sent,
            "answers": dict(sorted(self.answers.items())),
            "bad": len(self.bad),
            "acknowledged": len(self.acknowledged),
            "lost": len(self.lost),
            "unsettled": len(self.unsettled),
            "recover_s": round(self.recover_seconds, 2),
            "refused_after": len(self.refused_after),
            "settle_s": round(self.settle_seconds, 2),
            **self.facts,
        }

    def problems(self) -> list[str]:
        """Everything that breaks the promise, for a test's assertion message (empty: kept)."""
        found = [f"bad answer: {text}" for text in self.bad[:10]]
        found += [f"acknowledged write lost: {mark}" for mark in self.lost[:10]]
        found += [f"job not settled: {job}" for job in self.unsettled[:10]]
        if not self.acknowledged:
            found.append("no write was acknowledged at all")
        if math.isnan(self.recover_seconds):
            found.append("no write was acknowledged after the fault ended")
        return found


# A client's request: given its HTTP client, its number and its count of requests so far, send
# one and return the mark to keep if it is acknowledged (None: not a write to check) and the
# answer.
Request = Callable[[httpx.Client, int, int], tuple[str | None, httpx.Response]]


class Traffic:
    """Clients in threads, each sending requests in a loop until stopped (``pace`` seconds
    apart), every answer sorted into the Outcome: a success, a passing fault's 503, an error
    whose code is ``expected`` in normal work, or a bad answer. ``fault_over()`` marks the
    moment the fault ended."""

    def __init__(
        self,
        outcome: Outcome,
        base: str,
        key: str,
        request: Request,
        *,
        clients: int = 4,
        pace: float = 0.0,
        expected: frozenset[str] = frozenset(),
        dropped_ok: bool = False,
    ) -> None:
        self.outcome = outcome
        self._base = base
        self._key = key
        self._request = request
        self._dropped_ok = dropped_ok
        self._pace = pace  # each client's pause between requests, in seconds
        self._expected = expected  # error codes the requests meet in normal work (not faults)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._over_at: float | None = None
        self._threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(clients)
        ]

    def __enter__(self) -> Traffic:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(HANG_SECONDS + 10)

    def fault_over(self) -> None:
        with self._lock:
            self._over_at = time.monotonic()

    def wait_for_recovery(self, timeout: float = 60) -> None:
        """Wait until a write sent after the fault ended is acknowledged (or ``timeout``)."""
        deadline = time.monotonic() + timeout
        while math.isnan(self.outcome.recover_seconds) and time.monotonic() < deadline:
            time.sleep(0.05)

    def _client(self, number: int) -> None:
        headers = {"Authorization": f"Bearer {self._key}"}
        with httpx.Client(base_url=self._base, headers=headers, timeout=HANG_SECONDS) as http:
            count = 0
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    mark, response = self._request(http, number, count)
                except httpx.TimeoutException as exc:
                    self._sort("hang", f"no answer in {HANG_SECONDS} s ({type(exc).__name__})", bad=True)
                    continue
                except httpx.TransportError as exc:
                    self._sort("dropped", f"connection lost: {exc!r}", bad=not self._dropped_ok)
                    time.sleep(PAUSE_AFTER_503)
                    continue
                finally:
                    count += 1
                self._answer(mark, response, started)
                if self._pace:
                    time.sleep(self._pace)

    def _answer(self, mark: str | None, response: httpx.Response, started: float) -> None:
        status = response.status_code
        if status < 300:
            with self._lock:
                self.outcome.sent += 1
                self.outcome.answers[str(status)] += 1
                if mark is not None:
                    self.outcome.acknowledged.append(mark)
                    if (
                        self._over_at is not None
                        and started >= self._over_at
                        and math.isnan(self.outcome.recover_seconds)
                    ):
                        self.outcome.recover_seconds = time.monotonic() - self._over_at
            return
        try:
            body = response.json()
        except ValueError:
            body = {}
        code = body.get("code") if isinstance(body, dict) else None
        passing = status == 503 and code in PASSING_CODES and isinstance(body.get("retryAt"), int)
        expected = status < 500 and code in self._expected
        if not expected and self._over_at is not None and started >= self._over_at:
            with self._lock:  # the fault is over: a passing fault now is one too many
                self.outcome.refused_after.append(f"{status} {code}")
        self._sort(f"{status} {code}", f"{status} {response.text[:300]}", bad=not (passing or expected))
        time.sleep(PAUSE_AFTER_503)

    def _sort(self, answer: str, text: str, *, bad: bool) -> None:
        with self._lock:
            self.outcome.sent += 1
            self.outcome.answers[answer] += 1
            if bad:
                self.outcome.bad.append(text)


def until(check: Callable[[], bool], timeout: float, *, every: float = 0.1) -> bool:
    """Poll ``check`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(every)


class Service:
    """`cardvault serve` (``api_processes`` API processes) and, with a Redis, a `cardvault
    worker` beside it, kept running as a supervisor would (systemd's Restart=always): a worker
    that exits is started again. Logs go to ``workdir``."""

    def __init__(self, env: dict[str, str], workdir: Path, *, api_processes: int = 2) -> None:
        self.env = env
        self._workdir = workdir
        self._api_processes = api_processes
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self.api: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.worker_starts = 0
        self._log = (workdir / "service.log").open("ab")
        self._stop = threading.Event()
        self._supervisor = threading.Thread(target=self._supervise, daemon=True)

    def prepare(self, account: str = "faults") -> str:
        """Migrate the database, create an account and return an API key for it (in this
        process, as `cardvault migrate`, `accounts create` and `keys create` would, without
        three interpreters' start-up)."""
        db = open_database(Settings.from_env(self.env).database_url)
        try:
            db.migrate()
            with db.transaction() as session:
                account_id = accounts.create_account(session, name=account).id
                return keys.issue_api_key(session, account_id=account_id)
        finally:
            db.dispose()

    def start(self, *, start_seconds: float = 60) -> None:
        command = [
            str(BIN / "cardvault"),
            "serve",
            "--port",
            str(self.port),
            "--workers",
            str(self._api_processes),
        ]
        self.api = subprocess.Popen(command, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        if self.env.get("CARDVAULT_REDIS_URL"):
            self._start_worker()
            self._supervisor.start()
        if not until(self.healthy, start_seconds, every=0.2):
            self.stop()
            raise RuntimeError(f"the service did not start; see {self._workdir / 'service.log'}")

    def healthy(self) -> bool:
        """Whether an API process answers (raises once the API's parent has exited)."""
        if self.api is not None and self.api.poll() is not None:
            raise RuntimeError(f"the API process exited; see {self._workdir / 'service.log'}")
        try:
            return httpx.get(f"{self.base}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def _start_worker(self) -> None:
        command = [str(BIN / "cardvault"), "worker", "--processes", "1", "--threads", "4"]
        self.worker = subprocess.Popen(command, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        self.worker_starts += 1

    def _supervise(self) -> None:
        while not self._stop.wait(0.1):
            if self.worker is not None and self.worker.poll() is not None:
                self._start_worker()

    def api_children(self) -> list[int]:
        """The pids of the API processes serving requests (uvicorn's workers)."""
        assert self.api is not None
        return _children(self.api.pid)

    def worker_children(self) -> list[int]:
        """The pids of the worker's processes running actors (Dramatiq's workers)."""
        return _children(self.worker.pid) if self.worker is not None else []

    def stop(self) -> None:
        self._stop.set()
        if self._supervisor.is_alive():
            self._supervisor.join(5)
        for process in (self.api, self.worker):
            if process is not None and process.poll() is None:
                stop(process)
        self._log.close()


def _children(pid: int) -> list[int]:
    """The process's children; none once it is gone (a worker whose child was killed exits
    before its supervisor starts another)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []
    for task in tasks:
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return found


@contextmanager
def service(env: dict[str, str], workdir: Path, *, api_processes: int = 2) -> Iterator[tuple[Service, str]]:
    """A started Service with an account; yield it and the account's API key."""
    running = Service(env, workdir, api_processes=api_processes)
    key = running.prepare()
    running.start()
    try:
        yield running, key
    finally:
        running.stop()


def kill(pid: int) -> None:
    """SIGKILL a process that may have ended already."""
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def settle_pipeline(
    outcome: Outcome, base: str, key: str, operations: list[str], *, timeout: float = 60
) -> list[str]:
    """Wait until no card of the account is being processed and every tag operation in
    ``operations`` has ended; set ``outcome.settle_seconds`` and return what did not settle
    (cards whose processing failed for good included)."""
    started = time.monotonic()
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=HANG_SECONDS
    ) as http:

        def settled() -> bool:
            busy = [
                http.get("/cards", params={"processingState": state, "limit": 1}).json()["items"]
                for state in ("pending", "running")
            ]
            ended = [
                http.get(f"/tags/operations/{op}").json()["status"] in {"completed", "failed"}
                for op in operations
            ]
            return not any(busy) and all(ended)

        unsettled: list[str] = []
        if until(settled, timeout, every=0.2):
            outcome.settle_seconds = time.monotonic() - started
        else:
            unsettled.append(f"cards still processing or operations still running after {timeout} s")
        failed = http.get("/cards", params={"processingState": "failed", "limit": 5}).json()["items"]
        return unsettled + [f"card {card['id']} failed processing" for card in failed]


def stored_once(database_url: str, acknowledged: list[str]) -> list[str]:
    """The acknowledged cards not stored exactly once: each card's mark is what its content has
    after its last ``card=``."""
    engine = create_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT content FROM cards")).all()
    engine.dispose()
    stored = Counter(str(row[0]).rsplit("card=", 1)[-1] for row in rows)
    return [mark for mark in acknowledged if stored[mark] != 1]


PAGE = b"<!doctype html><html><head><title>A page that stays</title></head><body><p>Words.</p></body></html>"


def pipeline_env(
    workdir: Path, database_url: str, redis_url: str, pages: PageServer, *, stale_seconds: float
) -> dict[str, str]:
    """A production-shaped service's environment (PostgreSQL, a Redis broker) whose link stage
    fetches ``pages``, with no rate limit on cards and tag operations, and a sweeper that takes
    over a stage or operation with no sign of life for ``stale_seconds``. Serves PAGE at /page."""
    pages.routes["/page"] = (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE)
    return {
        **server_env(workdir, database_url),
        "CARDVAULT_REDIS_URL": redis_url,
        "CARDVAULT_FETCH_LINKS": "true",
        "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
        "CARDVAULT_FETCH_PORTS": str(pages.port),
        "CARDVAULT_RATE_LIMIT_CARDS": "off",
        "CARDVAULT_RATE_LIMIT_TAG_OPERATIONS": "off",
        "CARDVAULT_STALE_SECONDS": str(stale_seconds),
        "CARDVAULT_SWEEP_SECONDS": "0.5",
    }


def cards_and_renames(pages: PageServer, operations: list[str], *, rename_every: int) -> Request:
    """Requests that create link cards (of /page, each with a mark of its own and a tag), client
    0 starting a tag rename every ``rename_every`` requests instead (kept in ``operations``)."""

    def request(http: httpx.Client, number: int, count: int) -> tuple[str | None, httpx.Response]:
        if number == 0 and count % rename_every == rename_every - 1:
            rename = {"from": f"t{count - rename_every + 1}", "to": f"renamed-{count}"}
            response = http.post("/tags/rename", json=rename)
            if response.status_code == 202:
                operations.append(response.json()["id"])
            return None, response
        mark = f"{number}-{count}"
        return mark, http.post(
            "/cards", json={"content": pages.url(f"/page?card={mark}"), "tags": [f"t{count}"]}
        )

    return request
