"""Fault: the data disk full. The data directory (the local-disk blob store) is a small tmpfs of
its own while clients upload images (createUpload, the PUT to this server's upload URL,
createCard) and poll an export; a filler file then takes every free byte, and keeps taking what
is freed, for a few seconds, and is removed (the fault ends). Two cards are made just before it
fills, so their renditions are likely written to the full disk, and the export starts on it.

The service runs as a production deployment on local disk does: two API processes and a worker
process (Redis of the scenario's own as the broker, the database on PostgreSQL) sharing one data
disk, so the PUTs, the renditions and the export's archive meet the full disk in three processes.
With no database URL it runs the embedded default instead: one process, its SQLite database on
the same full disk (the bench's variant: a stage whose release cannot be written either waits
for the sweeper's take-over, minutes).

Promised: every answer during the fault is a success or the error body of a passing fault (503
``SERVICE_UNAVAILABLE`` with ``retryAt``); a PUT answers no ETag for bytes it did not keep; a
failed write leaves no partial file behind, and the upload URL takes the body again; after the
fault every acknowledged card's file is there, byte for byte, the export ends ``ready`` with the
file of every card made before it, and every card's processing settles."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import io
import os
import random
import shutil
import subprocess
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from harness.faults import PASSING_CODES, Outcome, Service, Traffic, until
from harness.faults.redis import RedisProcess
from harness.servers import IN_CI, server_env

FILL_CHUNK = 64 * 1024
PREPARED_CARDS = 2  # made just before the disk fills: their renditions are likely to meet it full
SETTLE_SECONDS = 60.0


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` mounted at ``path``, unmounted at the end. Skipped where
    mounting is not permitted, or failed under CI=true."""
    path.mkdir(parents=True, exist_ok=True)
    mount, umount = shutil.which("mount") or "mount", shutil.which("umount") or "umount"
    command = [mount, "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0700", "tmpfs", str(path)]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", None) or exc
        message = f"the full-disk tests need a tmpfs they may mount ({' '.join(command)}: {detail})"
        if IN_CI:
            pytest.fail(f"CI=true: {message}")
        pytest.skip(message)
    try:
        yield path
    finally:
        if subprocess.run([umount, str(path)], check=False, capture_output=True).returncode:
            subprocess.run([umount, "--lazy", str(path)], check=False, capture_output=True)


class Filler:
    """A file that takes every free byte of a disk, and keeps taking what is freed meanwhile
    (a failed write giving its bytes back), until it is removed at the block's end."""

    def __init__(self, disk: Path) -> None:
        self.path = disk / "filler"
        self._stop = threading.Event()
        self._fd = -1
        self._thread = threading.Thread(target=self._keep_full, daemon=True)

    def __enter__(self) -> Filler:
        self._fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
        self._fill()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        os.close(self._fd)
        self.path.unlink()

    def _fill(self) -> None:
        chunk = bytes(FILL_CHUNK)
        try:
            while True:
                os.write(self._fd, chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise

    def _keep_full(self) -> None:
        while not self._stop.wait(0.01):
            self._fill()


def noise_png(seed: int, side: int) -> bytes:
    """A PNG of random pixels: it does not compress (about 3 * side**2 bytes)."""
    pixels = random.Random(seed).randbytes(side * side * 3)  # noqa: S311 - test data, no secret
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(out, format="PNG", compress_level=1)
    return out.getvalue()


def disk_full(
    workdir: Path,
    database_url: str | None,
    *,
    disk_mb: int = 16,
    image_side: int = 110,
    clients: int = 2,
    pace: float = 0.05,
    warm_seconds: float = 0.5,
    fault_seconds: float = 3.0,
    stale_seconds: float = 0.5,
) -> Outcome:
    """Run the scenario on a fresh PostgreSQL database at ``database_url`` (two API processes,
    a worker, a Redis), or with None on the embedded default (SQLite on the full disk too)."""
    embedded = database_url is None
    outcome = Outcome("data disk full" + (" (embedded, SQLite on it)" if embedded else ""))
    env = {
        **server_env(workdir, database_url or ""),
        "CARDVAULT_RATE_LIMIT_CARDS": "off",
        "CARDVAULT_RATE_LIMIT_UPLOADS": "off",
        # An export or a stage given back on the full disk is sent again this soon.
        "CARDVAULT_STALE_SECONDS": str(stale_seconds),
        "CARDVAULT_SWEEP_SECONDS": "0.5",
        # A stage that found the disk full is sent again this soon (30 s by default: the
        # scenario would wait that long for its cards after the disk has room again).
        "CARDVAULT_FULL_DISK_RETRY_SECONDS": "1",
    }
    with contextlib.ExitStack() as stack:
        if not embedded:
            broker = RedisProcess(workdir)  # its own: the shared Redis is never the broker here
            stack.callback(broker.kill)
            broker.start()
            env["CARDVAULT_REDIS_URL"] = broker.url
        disk = stack.enter_context(small_disk(workdir / "data", disk_mb))
        env["CARDVAULT_DATA_DIR"] = str(disk)
        running = Service(env, workdir, api_processes=1 if embedded else 2)
        env["CARDVAULT_PUBLIC_URL"] = f"http://127.0.0.1:{running.port}"  # where upload URLs point
        key = running.prepare()
        stack.callback(running.stop)
        running.start()
        with httpx.Client(base_url=running.base, headers={"Authorization": f"Bearer {key}"}) as http:
            work = _Clients(image_side)
            traffic = Traffic(outcome, running.base, key, work.request, clients=clients, pace=pace)
            with traffic:
                time.sleep(warm_seconds)
                work.add_cards(http, outcome, [noise_png(-1 - n, image_side) for n in range(PREPARED_CARDS)])
                before_export = list(outcome.acknowledged)
                with Filler(disk):
                    work.start_export(http, outcome)
                    time.sleep(fault_seconds)
                traffic.fault_over()
                work.start_export(http, outcome)  # if the full disk refused it (SQLite)
                traffic.wait_for_recovery(30)
                time.sleep(0.3)
            _settle(http, outcome, work.export_id)
            outcome.bad += work.wrong_etags
            outcome.lost = _lost(http, outcome.acknowledged, work.sent)
            if work.export_id is not None:
                outcome.unsettled += _export_problems(http, work.export_id, before_export, work.sent)
            outcome.bad += _left_behind(disk)
    return outcome


@dataclasses.dataclass
class _Upload:
    file_key: str
    url: str
    headers: dict[str, str]
    body: bytes
    etag: str | None = None  # once its PUT was answered


class _Clients:
    """What the clients do: each uploads an image (createUpload, then the PUT, then createCard,
    each step sent again until it succeeds), and client 0 also polls the export."""

    def __init__(self, image_side: int) -> None:
        self.image_side = image_side
        self.pending: dict[int, _Upload] = {}  # by client
        self.sent: dict[str, str] = {}  # card id -> sha256 of the bytes its upload PUT
        self.wrong_etags: list[str] = []
        self.export_id: str | None = None

    def request(self, http: httpx.Client, number: int, count: int) -> tuple[str | None, httpx.Response]:
        if number == 0 and self.export_id is not None and count % 3 == 2:
            return None, http.get(f"/exports/{self.export_id}")
        upload = self.pending.get(number)
        if upload is None:
            body = noise_png(number * 1_000_000 + count, self.image_side)
            ticket = {"fileName": f"{number}-{count}.png", "fileSize": len(body), "mimeType": "image/png"}
            response = http.post("/uploads", json=ticket)
            if response.status_code == 200:
                issued = response.json()
                self.pending[number] = _Upload(
                    issued["fileKey"], issued["uploadUrl"], issued["headers"], body
                )
            return None, response
        if upload.etag is None:
            response = http.put(upload.url, content=upload.body, headers=upload.headers)
            if response.status_code == 200:
                upload.etag = response.headers.get("ETag", "")
                md5 = hashlib.md5(upload.body, usedforsecurity=False).hexdigest()
                if upload.etag.strip('"') != md5:
                    self.wrong_etags.append(
                        f"a PUT answered ETag {upload.etag} for a body whose MD5 is {md5}"
                    )
            return None, response
        response = http.post("/cards", json={"fileKey": upload.file_key, "fileEtag": upload.etag})
        if response.status_code != 200:
            return None, response
        del self.pending[number]
        card_id = response.json()["cardId"]
        self.sent[card_id] = hashlib.sha256(upload.body).hexdigest()
        return card_id, response

    def add_cards(self, http: httpx.Client, outcome: Outcome, bodies: list[bytes]) -> None:
        """Upload files, then make a card of each at once, beside the traffic."""
        uploads = []
        for body in bodies:
            ticket = {"fileName": "x.png", "fileSize": len(body), "mimeType": "image/png"}
            issued = http.post("/uploads", json=ticket).json()
            put = http.put(issued["uploadUrl"], content=body, headers=issued["headers"])
            uploads.append((body, {"fileKey": issued["fileKey"], "fileEtag": put.headers.get("ETag")}))
        for body, taken in uploads:
            made = http.post("/cards", json=taken)
            if made.status_code != 200:
                outcome.bad.append(
                    f"createCard before the fault answered {made.status_code} {made.text[:300]}"
                )
                continue
            card_id = made.json()["cardId"]
            self.sent[card_id] = hashlib.sha256(body).hexdigest()
            outcome.acknowledged.append(card_id)

    def start_export(self, http: httpx.Client, outcome: Outcome) -> None:
        """Start the export, unless it was started; a passing fault's 503 is tried again later."""
        if self.export_id is not None:
            return
        started = http.post("/exports")
        if started.status_code == 202:
            self.export_id = started.json()["job"]["id"]
        elif started.status_code != 503 or started.json().get("code") not in PASSING_CODES:
            outcome.bad.append(f"startExport answered {started.status_code} {started.text[:300]}")


def _settle(http: httpx.Client, outcome: Outcome, export_id: str | None) -> None:
    """Wait until no card is processing and the export has ended; note what did not."""
    over = time.monotonic()

    def settled() -> bool:
        busy = [
            http.get("/cards", params={"processingState": state, "limit": 1}).json()["items"]
            for state in ("pending", "running")
        ]
        job = None if export_id is None else http.get(f"/exports/{export_id}").json()["job"]
        return not any(busy) and (job is None or job["status"] not in ("pending", "running"))

    if until(settled, SETTLE_SECONDS, every=0.2):
        outcome.settle_seconds = time.monotonic() - over
    else:
        outcome.unsettled.append(f"cards still processing or the export running after {SETTLE_SECONDS} s")
    failed = http.get("/cards", params={"processingState": "failed", "limit": 5}).json()["items"]
    outcome.unsettled += [f"card {card['id']} failed processing" for card in failed]


def _lost(http: httpx.Client, acknowledged: list[str], sent: dict[str, str]) -> list[str]:
    """The acknowledged cards whose file is not there, byte for byte."""
    lost = []
    for card_id in acknowledged:
        answer = http.get(f"/cards/{card_id}")
        url = answer.json().get("fileUrl") if answer.status_code == 200 else None
        if url is None:
            lost.append(f"{card_id}: {answer.status_code} {answer.text[:200]}")
            continue
        got = http.get(url)
        if got.status_code != 200 or hashlib.sha256(got.content).hexdigest() != sent[card_id]:
            lost.append(f"{card_id}: its file answered {got.status_code} with {len(got.content)} other bytes")
    return lost


def _export_problems(http: httpx.Client, export_id: str, cards: list[str], sent: dict[str, str]) -> list[str]:
    """Why the export is not ready with the file of each of these cards, byte for byte."""
    job = http.get(f"/exports/{export_id}").json()["job"]
    if job["status"] != "ready":
        return [f"export {export_id} is {job['status']} (failureClass {job['failureClass']})"]
    archive = zipfile.ZipFile(io.BytesIO(http.get(job["downloadUrl"]).content))
    problems = []
    for card_id in cards:
        inside = [name for name in archive.namelist() if name.startswith(f"files/{card_id}/")]
        if len(inside) != 1 or hashlib.sha256(archive.read(inside[0])).hexdigest() != sent[card_id]:
            problems.append(f"export {export_id}: the file of card {card_id} is not in it as sent")
    return problems


def _left_behind(disk: Path) -> list[str]:
    """What writes left in the store's folder of partial writes (they hold space, and are no
    object); once every job has settled nothing may be there."""
    return [
        f"left behind after the fault: {path.relative_to(disk)} ({path.stat().st_size} bytes)"
        for path in (disk / "blobs" / "tmp").iterdir()
    ]
