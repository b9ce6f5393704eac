"""Faults, PostgreSQL: the database's connections killed (``pg_terminate_backend``) again and
again, and the server itself stopped (cleanly, or as a crash) and started again, while clients
create cards and start exports. A request that meets the fault is answered 503 with the error
body, and a 503 uses up no rate limit; a card acknowledged is stored once; every card's
processing and every export started ends soon after the fault (each export ready): the workers
resume what the fault stopped, rather than leave it to the sweeper, whose stale period is long
here so that anything left to it shows."""

from __future__ import annotations

import glob
import os
import random
import shutil
import string
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing
from cardvault.domain.database import open_database
from harness.faults import Outcome, Traffic, service, until
from harness.faults.redis import RedisProcess
from harness.servers import free_port, server_env

# Errors a client starting exports meets in normal work: its account's export is still
# running, or one became ready this week.
EXPORT_CODES = frozenset({"EXPORT_RUNNING", "RATE_LIMITED"})
ACCOUNTS = 3  # cards are spread over them, and each gets one export
TERMINATE = text(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


def postgres_bin() -> Path | None:
    """The folder of the PostgreSQL server's programs (initdb, pg_ctl): on PATH, or the newest
    Debian/Ubuntu puts under /usr/lib/postgresql; None when there are none."""
    found = shutil.which("pg_ctl")
    if found is not None:
        return Path(found).parent
    installed = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(installed[-1]).parent if installed else None


class PostgresCluster:
    """A PostgreSQL server of our own in a temporary folder, on a free loopback port, which can
    be stopped (``fast``: its sessions ended cleanly; ``immediate``: as in a crash, recovered
    from the WAL at the next start) and started again on the same port.

    PostgreSQL refuses to run as root: as root, its programs run as the ``postgres`` user in a
    folder that user owns."""

    def __init__(self) -> None:
        found = postgres_bin()
        if found is None:
            raise RuntimeError("no PostgreSQL server programs (initdb, pg_ctl)")
        self._bin = found
        self.dir = Path(tempfile.mkdtemp(prefix="cardvault-pg-"))
        self._data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/cardvault"
        self._as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_owner:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(
            "initdb", "-D", str(self._data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"
        )
        self.running = False

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self._as_owner, str(self._bin / program), *args], capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} {' '.join(args)} failed: {done.stderr or done.stdout}{tail}")

    def start(self) -> None:
        options = {
            "port": self.port,
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": self.dir,
            "max_connections": 200,  # two API processes and a worker, each a pool of up to 40
            # Nothing is flushed to the disk: the server process is stopped, never the machine.
            # A commit still waits for its WAL to reach the kernel (synchronous_commit stays
            # on), so a crashed server keeps every commit it acknowledged.
            "fsync": "off",
            "full_page_writes": "off",
        }
        self._run(
            "pg_ctl", "start", "-w", "-D", str(self._data), "-l", str(self.dir / "server.log"),
            "-o", " ".join(f"-c {name}={value}" for name, value in options.items()),
        )  # fmt: skip
        self.running = True

    def create_database(self) -> None:
        engine = create_engine(self.url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text("CREATE DATABASE cardvault"))
        engine.dispose()

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "stop", "-w", "-D", str(self._data), "-m", mode)
        self.running = False


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A started PostgresCluster with an empty database ``cardvault``; stopped and deleted at
    the end, whatever happened."""
    cluster = PostgresCluster()
    try:
        cluster.start()
        cluster.create_database()
        yield cluster
    finally:
        try:
            if cluster.running:
                cluster.stop("immediate")
        finally:
            shutil.rmtree(cluster.dir, ignore_errors=True)


class CardsAndExports:
    """The clients' requests: cards, each marked with its client and count, spread over
    ACCOUNTS accounts; and, when the scenario asks (``start_export``), client 0 starting an
    export of an account, sending the request again after each 503 until it is answered
    otherwise (202, or 409 when an export of the account is running already)."""

    def __init__(self, base: str, keys: list[str]) -> None:
        self._base = base
        self.keys = keys
        self._asked: int | None = None  # the account whose export client 0 is to start
        self._answered = threading.Event()
        self.tried: list[str] = []  # the keys of accounts whose export was asked for
        self.jobs: dict[str, str] = {}  # key -> the id of its export, from a 202
        # Refusals a request answered 503 must not cause: a rate limit it used up.
        self.refused: list[str] = []

    def start_export(self, account: int, *, wait: float = 0.0) -> None:
        """Have client 0 start the account's export; wait up to ``wait`` seconds until it is
        started and its worker has taken it."""
        deadline = time.monotonic() + wait
        self._answered.clear()
        self._asked = account
        if not wait or not self._answered.wait(wait):
            return
        job_id = self.jobs.get(self.keys[account])
        if job_id is None:
            return
        with httpx.Client(base_url=self._base, headers=_bearer(self.keys[account]), timeout=10) as http:
            until(
                lambda: http.get(f"/exports/{job_id}").json()["job"]["status"] != "pending",
                deadline - time.monotonic(),
                every=0.01,
            )

    def exporting(self) -> bool:
        """Whether an export started is still pending or running (or cannot be read now)."""
        with httpx.Client(base_url=self._base, timeout=10) as http:
            for key, job_id in self.jobs.items():
                answer = http.get(f"/exports/{job_id}", headers=_bearer(key))
                if answer.status_code != 200 or answer.json()["job"]["status"] in ("pending", "running"):
                    return True
        return False

    def request(self, http: httpx.Client, number: int, count: int) -> tuple[str | None, httpx.Response]:
        if number == 0 and self._asked is not None:
            return None, self._start_export(http, self._asked)
        mark = f"{number}-{count}"
        headers = _bearer(self.keys[count % len(self.keys)])
        return mark, http.post("/cards", json={"content": f"card {mark}"}, headers=headers)

    def _start_export(self, http: httpx.Client, account: int) -> httpx.Response:
        key = self.keys[account]
        response = http.post("/exports", headers=_bearer(key))
        if key not in self.tried:
            self.tried.append(key)
        if response.status_code == 202:
            self.jobs[key] = response.json()["job"]["id"]
        # An export that became ready this week refuses the next one (429, policy
        # "export-quota"); any other 429 is a limit the 503s before it used up.
        if response.status_code == 429 and response.json()["details"]["policy"] != "export-quota":
            self.refused.append(f"429 {response.text[:300]}")
        if response.status_code != 503:
            self._asked = None
            self._answered.set()
        return response

    def settle(self, outcome: Outcome, *, since: float, timeout: float) -> None:
        """Wait (up to ``timeout`` seconds) until every card's processing and the export of
        every account asked for one have ended, and note in ``outcome`` how long after
        ``since`` (the fault's end) that was; each export must be ready."""
        with httpx.Client(base_url=self._base, timeout=10) as http:

            def latest() -> dict[str, dict[str, Any] | None]:
                return {
                    key: http.get("/exports/latest", headers=_bearer(key)).json()["job"] for key in self.tried
                }

            def processing(key: str) -> bool:
                return any(
                    http.get(
                        "/cards", params={"processingState": state, "limit": 1}, headers=_bearer(key)
                    ).json()["items"]
                    for state in ("pending", "running")
                )

            def ended() -> bool:
                exporting = any(
                    job is not None and job["status"] in ("pending", "running") for job in latest().values()
                )
                return not exporting and not any(processing(key) for key in self.keys)

            if until(ended, timeout, every=0.2):
                outcome.settle_seconds = time.monotonic() - since
            else:
                outcome.unsettled.append(
                    f"cards still processing or exports running {timeout:g} s after the fault"
                )
            for key, job in latest().items():
                if job is None:
                    if key in self.jobs:
                        outcome.unsettled.append(f"export {self.jobs[key]} answered 202 is gone")
                elif job["status"] != "ready":
                    outcome.unsettled.append(
                        f"export {job['id']} {job['status']} ({job['failureClass']}, stage {job['stage']})"
                    )
        if not self.jobs:
            outcome.unsettled.append("no export was started")
        outcome.bad += self.refused


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _accounts(database_url: str, count: int, *, big_cards: int) -> list[str]:
    """Create ``count`` accounts and return an API key of each. The first gets ``big_cards``
    text cards of 500 KB, so that its export takes about 0.05 s a card (most of it in its
    snapshot's transaction, which a fault can then meet)."""
    db = open_database(database_url)
    rng = random.Random(27)  # noqa: S311 (text to export, not a secret)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(5000)]
    found = []
    with db.transaction() as session:
        for number in range(count):
            account = accounts.create_account(session, name=f"faults-{number}")
            found.append(keys.issue_api_key(session, account_id=account.id))
            for _ in range(big_cards if number == 0 else 0):
                content = " ".join(rng.choices(words, k=80_000))[: 500 * 1000]
                editing.add_card(session, account_id=account.id, content=content)
    db.dispose()
    return found


def _env(workdir: Path, database_url: str, redis_url: str, stale_seconds: float) -> dict[str, str]:
    return {
        **server_env(workdir, database_url),
        "CARDVAULT_REDIS_URL": redis_url,
        "CARDVAULT_RATE_LIMIT_CARDS": "off",  # as many writes as the clients can send
        # Low (the default is 10 a day), so that a 503 which used up a start would show: each
        # account starts one export, and asks again through an outage.
        "CARDVAULT_RATE_LIMIT_EXPORT_STARTS": "3/day",
        # The sweeper sends a job again once it is this stale (a minute by default): past the
        # time a scenario waits for its jobs to end, so that one the workers did not resume
        # themselves shows as unsettled. Their patience for the database is as long.
        "CARDVAULT_STALE_SECONDS": str(stale_seconds),
        "CARDVAULT_SWEEP_SECONDS": "0.5",
    }


def connections_killed(
    workdir: Path,
    database_url: str,
    *,
    kills: int = 8,
    every: float = 0.7,
    clients: int = 3,
    pace: float = 0.05,
    stale_seconds: float = 30.0,
    settle_seconds: float = 60.0,
    big_cards: int = 8,
) -> Outcome:
    """Kill every connection to the (fresh) database at ``database_url`` ``kills`` times,
    ``every`` seconds apart, while cards are written and exports run."""
    outcome = Outcome(f"PostgreSQL connections killed {kills} times (cards, exports)")
    broker = RedisProcess(workdir)
    broker.start()
    try:
        with service(_env(workdir, database_url, broker.url, stale_seconds), workdir) as (running, key):
            writes = CardsAndExports(running.base, _accounts(database_url, ACCOUNTS, big_cards=big_cards))
            traffic = Traffic(
                outcome, running.base, key, writes.request, clients=clients, pace=pace, expected=EXPORT_CODES
            )
            killer = create_engine(database_url, isolation_level="AUTOCOMMIT")
            with traffic:
                time.sleep(0.5)  # the fault's own rhythm: traffic flowing before it
                with killer.connect() as connection:
                    started = 0
                    for _ in range(kills):
                        # An export under way when the connections go; one at a time, as a
                        # worker process runs them (another would wait 10 s for its turn).
                        if started < ACCOUNTS and not writes.exporting():
                            writes.start_export(started, wait=2.0)
                            started += 1
                        connection.execute(TERMINATE)
                        time.sleep(every)
                traffic.fault_over()
                over = time.monotonic()
                traffic.wait_for_recovery()
                time.sleep(0.3)
            killer.dispose()
            writes.settle(outcome, since=over, timeout=settle_seconds)
    finally:
        broker.kill()
    outcome.lost = _lost(database_url, outcome.acknowledged)
    return outcome


def server_restarted(
    workdir: Path,
    *,
    mode: str = "fast",
    down_seconds: float = 2.0,
    clients: int = 3,
    pace: float = 0.05,
    stale_seconds: float = 30.0,
    settle_seconds: float = 60.0,
    big_cards: int = 8,
) -> Outcome:
    """Stop a PostgreSQL server of the scenario's own (``pg_ctl stop -m mode``) for
    ``down_seconds`` while cards are written and an export runs, then start it again."""
    outcome = Outcome(f"PostgreSQL server stopped ({mode}) for {down_seconds:g} s (cards, exports)")
    with postgres_cluster() as cluster:
        broker = RedisProcess(workdir)
        broker.start()
        try:
            with service(_env(workdir, cluster.url, broker.url, stale_seconds), workdir) as (running, key):
                writes = CardsAndExports(running.base, _accounts(cluster.url, ACCOUNTS, big_cards=big_cards))
                traffic = Traffic(
                    outcome,
                    running.base,
                    key,
                    writes.request,
                    clients=clients,
                    pace=pace,
                    expected=EXPORT_CODES,
                )
                with traffic:
                    time.sleep(0.5)  # the fault's own rhythm: traffic flowing before it
                    writes.start_export(0, wait=2.0)  # under way when the server stops
                    cluster.stop(mode)
                    # Asked again, as a client unsure whether its start got through would: 503
                    # while the server is down, then 409 (the export is running) or 429
                    # "export-quota" (it became ready meanwhile).
                    writes.start_export(0)
                    time.sleep(down_seconds)
                    cluster.start()
                    traffic.fault_over()
                    over = time.monotonic()
                    traffic.wait_for_recovery()
                    time.sleep(0.3)
                writes.settle(outcome, since=over, timeout=settle_seconds)
        finally:
            broker.kill()
        outcome.lost = _lost(cluster.url, outcome.acknowledged)
    return outcome


def _lost(database_url: str, acknowledged: list[str]) -> list[str]:
    """The acknowledged cards not stored exactly once."""
    engine = create_engine(database_url)
    with engine.connect() as connection:
        marked = connection.execute(text("SELECT content FROM cards WHERE content LIKE 'card %'"))
        stored = Counter(row[0].removeprefix("card ") for row in marked.all())
    engine.dispose()
    return [mark for mark in acknowledged if stored[mark] != 1]
