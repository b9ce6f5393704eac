"""A ZIP export survives its worker being killed mid-archive, in production's shape (PostgreSQL,
Redis, SeaweedFS as S3, `cardvault worker` processes): the killed worker's multipart upload is
never completed, the sweeper hands the job to the next worker, which starts the archive over,
and the archive marked ready is whole: its central directory reads, and every file matches the
size and sha256 its manifest gives."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from sqlalchemy import select

from cardvault.domain.db import Database
from cardvault.domain.models import ExportJob
from cardvault.domain.portability.exports import runs as export_runs
from tests.contract.production import kill, worker
from tests.contract.production import production as shape

# 96 MiB of files: an archive of six 16 MiB parts, so the worker is killed with parts uploaded
# and more to come.
FILES, FILE_BYTES, NOTES = 24, 4 * 1024 * 1024, 100


@pytest.fixture
def production(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, str, Database]]:
    with shape(tmp_path, "cardvault_export_crash") as started:
        yield started


def _uploaded_card(base: str, headers: dict[str, str], data: bytes, name: str) -> None:
    ticket = httpx.post(
        f"{base}/uploads",
        headers=headers,
        json={"fileName": name, "fileSize": len(data), "mimeType": "application/pdf"},
    ).json()
    stored = httpx.put(ticket["uploadUrl"], content=data, headers=ticket["headers"], timeout=60)
    assert stored.status_code == 200, stored.text
    created = httpx.post(
        f"{base}/cards",
        headers=headers,
        json={"fileKey": ticket["fileKey"], "fileEtag": stored.headers["ETag"]},
    )
    assert created.status_code == 200, created.text


def _s3(env: dict[str, str]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=env["CARDVAULT_S3_ENDPOINT_URL"],
        aws_access_key_id=env["CARDVAULT_S3_ACCESS_KEY_ID"],
        aws_secret_access_key=env["CARDVAULT_S3_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )


def _parts_uploaded(s3: Any, bucket: str) -> bool:
    """Whether an export's multipart upload has a part stored."""
    uploads = s3.list_multipart_uploads(Bucket=bucket, Prefix="exports/").get("Uploads", [])
    return any(
        s3.list_parts(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]).get("Parts")
        for upload in uploads
    )


def _lease_of(key: str) -> str:
    return key.rsplit("-", 1)[1].removesuffix(".zip")


def _row(db: Database) -> ExportJob:
    with db.transaction(write=False) as session:
        job = session.scalars(select(ExportJob)).one()
        session.expunge(job)
        return job


def _stage(db: Database) -> str | None:
    return _row(db).stage


def _job(base: str, headers: dict[str, str]) -> dict[str, Any]:
    job: dict[str, Any] = httpx.get(f"{base}/exports/latest", headers=headers).json()["job"]
    return job


def test_a_worker_killed_mid_archive_leaves_a_whole_archive_in_the_end(
    production: tuple[dict[str, str], str, str, Database], tmp_path: Path
) -> None:
    env, base, key, db = production
    headers = {"Authorization": f"Bearer {key}"}
    contents = {}
    for number in range(FILES):
        data = b"%PDF-1.4\n" + os.urandom(FILE_BYTES)
        contents[f"paper-{number}.pdf"] = data
        _uploaded_card(base, headers, data, f"paper-{number}.pdf")
    for number in range(NOTES):
        assert (
            httpx.post(f"{base}/cards", headers=headers, json={"content": f"note {number}"}).status_code
            == 200
        )
    log = tmp_path / "workers.log"
    first = worker(env, log)
    try:
        assert httpx.post(f"{base}/exports", headers=headers).status_code == 202
        deadline = time.monotonic() + 120
        s3 = _s3(env)
        while not _parts_uploaded(s3, env["CARDVAULT_S3_BUCKET"]):  # its multipart upload is under way
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.01)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert _stage(db) == "archiving", "the archive was written before the worker was killed"
        killed = _row(db)
    finally:
        kill(first)
    second = worker(env, log)
    try:
        deadline = time.monotonic() + 180
        while (job := _job(base, headers))["status"] != "ready":
            assert job["status"] in ("pending", "running"), (job, log.read_text()[-3000:])
            assert time.monotonic() < deadline, (job, log.read_text()[-3000:])
            time.sleep(0.2)
    finally:
        kill(second)
    assert (job["cardCount"], job["filesIncluded"], job["filesOmitted"]) == (FILES + NOTES, FILES, 0)
    # The killed attempt's upload was never completed: the one archive stored is the next's.
    listed = _s3(env).list_objects_v2(Bucket=env["CARDVAULT_S3_BUCKET"], Prefix="exports/")
    stored = [item["Key"] for item in listed.get("Contents", [])]
    assert killed.lease is not None and _row(db).attempts == 2
    assert stored == [export_runs.object_key(killed.account_id, killed.id, _lease_of(stored[0]))]
    assert stored[0] != export_runs.object_key(killed.account_id, killed.id, killed.lease)
    body = httpx.get(job["downloadUrl"], timeout=120).content
    assert len(body) == job["sizeBytes"]
    archive = zipfile.ZipFile(io.BytesIO(body))  # reads the central directory
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["counts"] == {
        "cards": FILES + NOTES,
        "folders": 0,
        "filesIncluded": FILES,
        "filesOmitted": 0,
    }
    assert sorted(archive.namelist()) == sorted([e["path"] for e in manifest["files"]] + ["manifest.json"])
    for entry in manifest["files"]:
        data = archive.read(entry["path"])  # checks each member's CRC-32 too
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"])
    papers = {
        e["path"].rsplit("/", 1)[1]: e["sha256"] for e in manifest["files"] if e["path"].startswith("files/")
    }
    assert papers == {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}
