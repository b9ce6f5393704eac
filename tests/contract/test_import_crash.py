"""An import survives its worker being killed mid-file, in production's shape (PostgreSQL,
Redis, SeaweedFS as S3, `cardvault worker` processes): `kill -9` with batches committed and more
to come, then the sweeper hands the job to the next worker, which goes on after the last
committed batch. Every entry becomes exactly one card: none is lost, none is taken twice."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.domain.portability.imports import jobs as import_jobs
from tests.contract.production import kill, worker
from tests.contract.production import production as shape

ENTRIES = 1_000  # 5 batches


@pytest.fixture
def production(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, str, Database]]:
    with shape(tmp_path, "cardvault_import_crash") as started:
        yield started


def _bookmarks() -> bytes:
    rows = "".join(
        f'<DT><A HREF="https://site{i % 40}.example/page/{i}" ADD_DATE="{1_600_000_000 + i}">Page {i}</A>\n'
        for i in range(ENTRIES)
    )
    return (
        f"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE>\n<DL><p>\n{rows}</DL><p>\n".encode()
    )


def _started(base: str, headers: dict[str, str], data: bytes) -> str:
    ticket = httpx.post(
        f"{base}/uploads",
        headers=headers,
        json={"fileName": "bookmarks.html", "fileSize": len(data), "mimeType": "text/html"},
    ).json()
    stored = httpx.put(ticket["uploadUrl"], content=data, headers=ticket["headers"], timeout=60)
    assert stored.status_code == 200, stored.text
    started = httpx.post(
        f"{base}/imports",
        headers=headers,
        json={"fileKey": ticket["fileKey"], "fileEtag": stored.headers["ETag"]},
    )
    assert started.status_code == 202, started.text
    return str(started.json()["job"]["id"])


def _job(base: str, headers: dict[str, str], import_id: str) -> dict[str, Any]:
    job: dict[str, Any] = httpx.get(f"{base}/imports/{import_id}", headers=headers).json()["job"]
    return job


def test_a_worker_killed_mid_import_leaves_every_entry_one_card(
    production: tuple[dict[str, str], str, str, Database], tmp_path: Path
) -> None:
    env, base, key, db = production
    headers = {"Authorization": f"Bearer {key}"}
    import_id = _started(base, headers, _bookmarks())
    log = tmp_path / "workers.log"
    first = worker(env, log)
    try:
        deadline = time.monotonic() + 120
        while (job := _job(base, headers, import_id))["created"] < import_jobs.BATCH_SIZE:
            assert job["status"] in import_jobs.ACTIVE, (job, log.read_text()[-3000:])
            assert time.monotonic() < deadline, (job, log.read_text()[-3000:])
            time.sleep(0.01)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        kill(first)
    killed = _job(base, headers, import_id)
    assert killed["status"] == "running" and 0 < killed["created"] < ENTRIES, "killed after it ended"
    second = worker(env, log)
    try:
        deadline = time.monotonic() + 180
        while (job := _job(base, headers, import_id))["status"] in import_jobs.ACTIVE:
            assert time.monotonic() < deadline, (job, log.read_text()[-3000:])
            time.sleep(0.2)
    finally:
        kill(second)
    assert (job["status"], job["found"], job["created"], job["skipped"], job["failed"]) == (
        "completed",
        ENTRIES,
        ENTRIES,
        0,  # an entry taken twice would be a duplicate of its own card: skipped
        0,
    )
    with db.transaction(write=False) as session:
        cards = session.scalar(select(func.count()).select_from(Card))
        pages = session.scalar(select(func.count(func.distinct(Card.url))))
    assert cards == pages == ENTRIES
