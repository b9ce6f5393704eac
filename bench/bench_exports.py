"""Exports: what a ZIP export of one account costs, against zipstream-ng alone zipping the same
files, measured in the same run in alternating rounds, each side in a child process of its own.

- load: one account of N cards written with the ORM in batches of 1,000 (text cards with two
  tags each, a tenth of them in one of ten folders, and F document cards of about 5 MB of
  random bytes each, M MB in all, put in the local-disk blob store); SQLite by default, or a
  fresh PostgreSQL database.
- throughput: a whole export in a child process (``start_export``, then the ``run_export``
  actor run in-process: the cards snapshotted into ``export_items``, then the archive streamed
  through zipstream-ng into the store, with a sha256 of each file, the store's MD5 and fsync)
  against a child in which zipstream-ng alone zips the same object files (stored) and the
  export's three JSON documents (deflated, taken from the first export) into a file on the
  same disk, fsynced. MB/s of archive bytes each, and ours over the baseline (aim: >= 0.5x);
  with the seconds ours spent snapshotting, in heartbeats and reading the items back.
- memory: each child's peak RSS (VmHWM, reset once it is idle where the kernel allows) above
  its idle RSS (VmRSS after imports, binding and a gc); aim for ours: at most 64 MiB.
- verify: the first export's archive passes ``testzip()``, its manifest counts N cards, F files
  included and none omitted, and its cards.json holds N cards: the bench measured a real export.

    .venv/bin/python -m bench.bench_exports [--database sqlite|postgresql] [--cards N]
        [--megabytes M] [--rounds R]

Prints a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import zipstream
from sqlalchemy import delete, select

from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.bootstrap import bootstrap
from cardvault.domain import folders
from cardvault.domain.auth import accounts
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card, ExportJob, FolderCard
from cardvault.domain.portability.exports import jobs as exports
from cardvault.domain.search.index import index_card
from cardvault.domain.tags import counts
from cardvault.settings import Settings
from harness.servers import ROOT, fresh_database

FILE_MB = 5  # about this many MB of random bytes per file card
BATCH = 1000
DOCUMENTS = ("cards.json", "folders.json", "manifest.json")
SPENT = ("_snapshot", "heartbeat", "items")  # the parts of an export whose time is reported


def _settings(data_dir: Path, url: str) -> Settings:
    return Settings.from_env({
        "CARDVAULT_DATA_DIR": str(data_dir),
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_SECRET_KEY": "b" * 48,
        "CARDVAULT_PUBLIC_URL": "http://127.0.0.1:8000",
        "CARDVAULT_AI": "false",
        "CARDVAULT_SPEECH": "false",
        "CARDVAULT_FETCH_LINKS": "false",
    })  # fmt: skip


def _mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _idle() -> tuple[float, bool]:
    """This process's idle RSS in MiB, and whether its peak could be reset to it."""
    gc.collect()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux 4.0+)
    idle = _mib("VmRSS")
    return idle, _mib("VmHWM") <= idle + 1


# -- load ---------------------------------------------------------------------------------------


def _load(db: Database, store: BlobStore, *, count: int, megabytes: int) -> dict[str, Any]:
    """One account of ``count`` cards, ``files`` of them document cards of random bytes."""
    files = min(count, max(1, round(megabytes / FILE_MB))) if megabytes > 0 else 0
    size = megabytes * 1_000_000 // files if files else 0
    every = count // files if files else 0
    with db.transaction() as session:
        account_id = accounts.create_account(session, name="bench-exports").id
        made = [folders.create_folder(session, account_id=account_id, name=f"Folder {i}") for i in range(10)]
        folder_ids = [folder.id for folder in made]
    start = now_ms() - count
    for first in range(0, count, BATCH):
        with db.transaction() as session:
            batch = []
            for i in range(first, min(first + BATCH, count)):
                fields: dict[str, Any] = {"type": "text", "content": f"Card {i}: about topic {i % 97}. " * 8}
                if every and i % every == 0 and i // every < files:
                    name, data = f"data-{i // every:04d}.zip", os.urandom(size)
                    key = f"accounts/{account_id}/files/bench{i:06d}/{name}"
                    etag = store.put(key, data, content_type="application/zip").etag
                    fields = {"type": "document", "content": "", "file_object": key, "file_etag": etag,
                              "file_name": name, "file_size": size, "mime_type": "application/zip",
                              "file_kind": "archive", "file_extension": "zip"}  # fmt: skip
                card = Card(id=new_id("crd"), account_id=account_id, is_favorited=i % 25 == 0,
                            created_at=start + i, updated_at=start + i, **fields)  # fmt: skip
                editing.replace_tags(card, "user", [f"topic-{i % 20}", f"group-{i % 7}"])
                batch.append(card)
            session.add_all(batch)
            session.flush()
            for card in batch:
                index_card(session, card)
            for c in batch[::10]:
                session.add(FolderCard(folder_id=folder_ids[c.pk % 10], card_pk=c.pk, added_at=c.created_at,
                                       card_created_at=c.created_at))  # fmt: skip
            tally = counts.tally((c.pk, r.name_key, r.name) for c in batch for r in c.tag_rows)
            counts.apply(session, account_id=account_id, before=counts.NONE, after=tally)
    return {"account_id": account_id, "files": files, "file_bytes": files * size}


# -- the children -------------------------------------------------------------------------------


def _timed(owner: Any, name: str, spent: dict[str, float]) -> None:
    """Wrap ``owner.name`` to add up its time in ``spent[name]`` (only to report it)."""
    inner = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - started

    setattr(owner, name, timed)


def _child_ours(data_dir: str, url: str, account_id: str) -> dict[str, Any]:
    from cardvault.workers import exports as worker

    settings = _settings(Path(data_dir), url)
    db = open_database(settings.database_url)
    store = store_from_settings(settings)
    bootstrap(settings, database=db, blobs=store)
    with db.transaction(write=False) as session:
        exports.latest_export(session, account_id=account_id)  # a connection, as a worker has
    spent: dict[str, float] = {}  # where the time goes: the snapshot, heartbeats, reads of the items
    _timed(worker, "_snapshot", spent)
    _timed(exports, "heartbeat", spent)
    _timed(exports, "items", spent)
    idle, reset = _idle()
    started = time.perf_counter()
    with db.transaction() as session:
        job_id = exports.start_export(session, account_id=account_id).id
    worker.run_export.fn(job_id)
    seconds = time.perf_counter() - started
    peak = _mib("VmHWM")
    with db.transaction(write=False) as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.status == "ready", f"export {job_id} ended {job and job.status}"
        key, size = job.object_key or "", job.size_bytes or 0
    return {"seconds": seconds, "bytes": size, "idle_mib": idle, "peak_mib": peak, "hwm_reset": reset,
            "spent": spent, "job_id": job_id, "key": key}  # fmt: skip


def _child_baseline(members: str, out: str) -> dict[str, Any]:
    entries = json.loads(Path(members).read_text())
    idle, reset = _idle()
    started = time.perf_counter()
    stream = zipstream.ZipStream(compress_type=zipfile.ZIP_STORED)
    for path, name, deflate in entries:
        stream.add_path(path, name, compress_type=zipfile.ZIP_DEFLATED if deflate else None)
    with open(out, "wb") as f:
        for chunk in stream:
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "bytes": os.path.getsize(out), "idle_mib": idle, "peak_mib": _mib("VmHWM"),
            "hwm_reset": reset}  # fmt: skip


def _run_child(*args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "CARDVAULT_REDIS_URL"}  # the stub broker
    command = [sys.executable, "-m", "bench.bench_exports", "--child", *args]
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# -- the parent ---------------------------------------------------------------------------------


def _verify(path: Path, count: int, files: int, json_dir: Path) -> dict[str, Any]:
    """Check the archive and keep its JSON documents for the baseline."""
    started = time.perf_counter()
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None, "a member's CRC does not match"
        manifest = json.loads(archive.read("manifest.json"))
        card_records = json.loads(archive.read("cards.json"))["cards"]
        entries = len(archive.namelist())
        for name in DOCUMENTS:
            archive.extract(name, json_dir)
    counts = manifest["counts"]
    assert counts["cards"] == len(card_records) == count, (counts, len(card_records))
    assert counts["filesIncluded"] == files and counts["filesOmitted"] == 0, counts
    assert len(manifest["files"]) == files + 2 and entries == files + 3, (len(manifest["files"]), entries)
    assert sum(1 for r in card_records if r["file"]) == files
    return {"testzip_ok": True, "entries": entries, "manifest_counts": counts,
            "verify_seconds": round(time.perf_counter() - started, 1)}  # fmt: skip


def _members(db: Database, store: LocalDiskStore, account_id: str, json_dir: Path) -> list[list[object]]:
    """What the baseline zips: the same object files under the same names, and the JSON."""
    with db.transaction(write=False) as session:
        rows = session.scalars(
            select(Card).where(Card.account_id == account_id, Card.file_object.is_not(None))
        )
        found = [[str(store.open(c.file_object or "")), f"files/{c.id}/{c.file_name}", False] for c in rows]
    return found + [[str(json_dir / name), name, True] for name in DOCUMENTS]


def _forget(db: Database, store: BlobStore, job: dict[str, Any]) -> None:
    """Delete the export and its archive, so the weekly rule lets the next round start one."""
    store.delete([job["key"]])
    with db.transaction() as session:
        session.execute(delete(ExportJob).where(ExportJob.id == job["job_id"]))


def _rate(r: dict[str, Any]) -> float:
    return float(r["bytes"]) / 1e6 / float(r["seconds"])


def _above(r: dict[str, Any]) -> float:
    return float(r["peak_mib"]) - float(r["idle_mib"])


def bench(kind: str, count: int, megabytes: int, rounds: int, workdir: Path) -> list[dict[str, Any]]:
    url = fresh_database(kind, workdir)
    settings = _settings(workdir, url)
    db = open_database(settings.database_url)
    db.migrate()
    store = store_from_settings(settings)
    assert isinstance(store, LocalDiskStore), "the bench reads the objects' files on local disk"
    started = time.perf_counter()
    loaded = _load(db, store, count=count, megabytes=megabytes)
    load = {"workload": "load", "metric": "seconds", "value": round(time.perf_counter() - started, 1)}
    json_dir, members = workdir / "json", workdir / "members.json"
    ours: list[dict[str, Any]] = []
    base: list[dict[str, Any]] = []
    checked: dict[str, Any] = {}
    for round_ in range(rounds):
        for side in ("ours", "baseline") if round_ % 2 == 0 else ("baseline", "ours"):
            if side == "ours":
                job = _run_child("ours", str(workdir), url, loaded["account_id"])
                if not checked:  # the first round runs ours first: the baseline needs its JSON
                    checked = _verify(store.open(job["key"]), count, loaded["files"], json_dir)
                    members.write_text(json.dumps(_members(db, store, loaded["account_id"], json_dir)))
                _forget(db, store, job)
                ours.append(job)
            else:
                base.append(_run_child("baseline", str(members), str(workdir / "baseline.zip")))
                (workdir / "baseline.zip").unlink()
    db.dispose()
    load.update(database=kind, cards=count, files=loaded["files"], file_mb=loaded["file_bytes"] // 10**6)
    ratios = [_rate(o) / _rate(b) for o, b in zip(ours, base, strict=True)]
    throughput = {
        "workload": "export_throughput", "metric": "MB/s",
        "value": round(statistics.median(map(_rate, ours)), 1),
        "baseline_value": round(statistics.median(map(_rate, base)), 1),
        "ratio": round(statistics.median(ratios), 2), "aim": "ratio >= 0.5",
        "seconds": [round(r["seconds"], 1) for r in ours],
        "baseline_seconds": [round(r["seconds"], 1) for r in base],
        **{f"{k.strip('_')}_seconds": [round(r["spent"].get(k, 0), 1) for r in ours] for k in SPENT},
        "archive_bytes": ours[0]["bytes"], "baseline_bytes": base[0]["bytes"],
    }  # fmt: skip
    memory = {
        "workload": "export_rss_above_idle", "metric": "MiB", "aim": "value <= 64",
        "value": round(max(map(_above, ours)), 1), "baseline_value": round(max(map(_above, base)), 1),
        "idle_mib": round(ours[0]["idle_mib"], 1), "baseline_idle_mib": round(base[0]["idle_mib"], 1),
        "peak_reset_at_idle": all(r["hwm_reset"] for r in ours + base),
    }  # fmt: skip
    return [load, throughput, memory, {"workload": "export_verify", "metric": "entries", **checked}]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--megabytes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        side, *rest = args.child
        print(json.dumps((_child_ours if side == "ours" else _child_baseline)(*rest)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-exports-") as workdir:
        results = bench(args.database, args.cards, args.megabytes, args.rounds, Path(workdir))
    print(f"\n{'workload':<24}{'ours':>10}{'baseline':>10}{'ratio':>8}  extra")
    for r in results:
        extra = {k: v for k, v in r.items() if k not in ("workload", "value", "baseline_value", "ratio")}
        cells = [str(r.get(k, "")) for k in ("value", "baseline_value", "ratio")]
        print(f"{r['workload']:<24}{cells[0]:>10}{cells[1]:>10}{cells[2]:>8}  {extra}")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
