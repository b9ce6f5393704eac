"""Our own export archive imported over the API (``format: cardvault``), restored by the import
actor a card at a time (cardvault.workers.restores): files, folders and cards whole; a card that
fails is listed and removed; an archive that fails its checks fails the job; a run killed
mid-card leaves a half-made card the next run removes before restoring the entry anew, so no
card is made twice; a run whose job was taken over stops without a trace."""

from __future__ import annotations

import contextlib
import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select, update
from starlette.testclient import TestClient

from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.files.quotas import NO_QUOTAS
from cardvault.domain.models import Card, ImportJob
from cardvault.domain.portability import archive
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.restore import checks as restore_checks
from cardvault.domain.portability.restore import jobs as restore_jobs
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers import broker, embedded, restores
from cardvault.workers.files import delete_doomed_objects
from cardvault.workers.imports import run_import
from tests.conftest import Api, api_of_new_account, app_env
from tests.unit.domain.files.test_quotas import assert_counters_hold
from tests.unit.handlers.cli.test_restore import _card, make_archive
from tests.unit.handlers.test_imports import imported, start
from tests.unit.handlers.test_uploads import png


def _archive(tmp_path: Path, cards: list[dict[str, Any]], files: dict[str, bytes] | None = None) -> bytes:
    return make_archive(tmp_path / "export.zip", cards, files).read_bytes()


def _count(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        return int(
            session.scalar(select(func.count()).select_from(Card).where(Card.account_id == account_id))
        )


def test_an_archive_is_told_by_its_members_and_restored_whole(api: Api, tmp_path: Path) -> None:
    picture = {
        "type": "image",
        "content": "",
        "file": {"path": "files/crd_9/beach.png"},
        "fileName": "beach.png",
        "mimeType": "image/png",
    }
    data = _archive(tmp_path, [_card(1), _card(2), _card(9, **picture)], {"files/crd_9/beach.png": png()})
    job = imported(api, data)
    assert (job["status"], job["format"], job["found"], job["created"], job["failed"]) == (
        "completed",
        "cardvault",
        3,
        3,
        0,
    )
    items = api.get("/v1/cards", params={"sort": "oldest"}).json()["items"]
    assert [item["type"] for item in items] == ["text", "text", "image"]
    image = items[2]
    assert api.client.get(image["fileUrl"]).content == png()  # its file, copied out of the archive
    folders = api.get("/v1/folders").json()["items"]
    assert [f["name"] for f in folders] == ["Imported"] and all(item["folderIds"] for item in items)


def test_a_card_that_fails_is_listed_and_the_rest_restored(api: Api, tmp_path: Path) -> None:
    data = _archive(tmp_path, [_card(1), _card(2, type="spaceship"), _card(3)])
    job = imported(api, data, format="cardvault")
    assert (job["status"], job["created"], job["failed"]) == ("completed", 2, 1)
    assert job["failures"][0]["entry"] == "card crd_2"
    listed = api.get("/v1/cards", params={"sort": "oldest", "include": "content"}).json()["items"]
    assert [i["content"] for i in listed] == [
        "note 1",
        "note 3",
    ]


def test_an_archive_that_fails_its_checks_fails_the_job(api: Api, tmp_path: Path) -> None:
    data = make_archive(tmp_path / "x.zip", [_card(1)], cards_json=b"[]").read_bytes()
    job = imported(api, data, format="cardvault")
    assert job["status"] == "failed" and "cards.json" in job["error"]
    assert api.get("/v1/cards").json()["items"] == []


class _Killed(Exception):
    """The worker dies here."""


def test_a_run_killed_mid_card_leaves_nothing_twice(api: Api, database: Database, tmp_path: Path) -> None:
    embedded.wait_until_idle()
    data = _archive(tmp_path, [_card(n) for n in range(1, 6)])
    key = f"accounts/{api.account_id}/imports/killed/export.zip"
    broker.services_of(broker.broker).blobs.put(key, data, content_type="application/zip")
    with database.transaction() as session:
        job = import_jobs.new_job(
            import_id=import_jobs.new_import_id(),
            account_id=api.account_id,
            file_format="cardvault",
            on_duplicate="skip",
            file_name="export.zip",
            file_size=len(data),
            object_key=key,
        )
        session.add(job)
        import_id = job.id
    with database.transaction() as session:
        assert import_jobs.claim(session, import_id=import_id, lease="first", handed=None, stale_ms=60_000)
    archive = restore_checks.open_archive(_spooled(tmp_path, data))
    with database.transaction() as session:
        restore_jobs.restoring(session, import_id=import_id, lease="first", start=0, found=5)
    made: list[str] = []

    def whole(_session: Any) -> None:
        raise _Killed  # the worker dies before the card is whole

    def made_card(session: Any, card_id: str) -> None:
        assert restore_jobs.card_made(session, import_id=import_id, lease="first", start=0, card_id=card_id)

    with contextlib.suppress(_Killed):
        restores.restore_card(
            database,
            broker.services_of(broker.broker).blobs,
            broker.services_of(broker.broker).decoder,
            archive,
            api.account_id,
            restore_checks.check_record(archive.cards[0], restores.servable()),
            {},
            made,
            quotas=NO_QUOTAS,
            on_made=made_card,
            on_whole=whole,
        )
    archive.zip.close()
    assert _count(database, api.account_id) == 1  # made, not whole
    with database.transaction() as session:  # its heartbeat went stale
        session.execute(
            update(ImportJob).where(ImportJob.id == import_id).values(heartbeat_at=now_ms() - 120_000)
        )
    run_import.fn(import_id)
    final = api.get(f"/v1/imports/{import_id}").json()["job"]
    assert (final["status"], final["created"], final["failed"]) == ("completed", 5, 0)
    assert _count(database, api.account_id) == 5
    assert api.get(f"/v1/cards/{made[0]}").status_code == 404  # the half-made card was removed


def test_a_run_whose_job_was_taken_over_stops_and_counts_nothing(
    api: Api, database: Database, tmp_path: Path
) -> None:
    started = start(api, _archive(tmp_path, [_card(1)]), format="cardvault")
    import_id = started.json()["job"]["id"]
    embedded.wait_until_idle()
    assert api.get(f"/v1/imports/{import_id}").json()["job"]["status"] == "completed"
    key = f"accounts/{api.account_id}/imports/again/export.zip"
    broker.services_of(broker.broker).blobs.put(
        key, _archive(tmp_path, [_card(2)]), content_type="application/zip"
    )
    with database.transaction() as session:
        session.execute(
            update(ImportJob)
            .where(ImportJob.id == import_id)
            .values(status="running", lease="theirs", position=0, object_key=key, active_account_id=None)
        )
    ran = restores.restore_slice(
        broker.services_of(broker.broker),
        import_id=import_id,
        lease="mine",
        position=0,
        key=key,
    )
    assert ran is False and _count(database, api.account_id) == 1  # card 1 only, from the first run


def _spooled(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "spooled.zip"
    path.write_bytes(data)
    assert zipfile.is_zipfile(io.BytesIO(data))
    return path


BIG = 1_000_000  # bytes of each big file: ten of them are past a quota of three
QUOTA = 3 * BIG


def _big_note(number: int, path: str) -> dict[str, Any]:
    fields = {"type": "document", "content": "", "fileName": "big.txt", "mimeType": "text/plain"}
    return _card(number, **fields, file={"path": path})


def _deflated(tmp_path: Path, cards: list[dict[str, Any]], files: dict[str, bytes]) -> bytes:
    """The archive of these cards and files, compressed as an export could be: a few KB for
    ten megabytes of repeated bytes."""
    plain = zipfile.ZipFile(io.BytesIO(_archive(tmp_path, cards, files)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as packed:
        for name in plain.namelist():
            packed.writestr(name, plain.read(name))
    return out.getvalue()


@pytest.fixture
def quota_api(tmp_path: Path, database: Database) -> Iterator[Api]:
    """A new account of an app whose accounts may store QUOTA bytes."""
    env = {**app_env(tmp_path, database), "CARDVAULT_QUOTA_STORED_BYTES": str(QUOTA)}
    with TestClient(create_app(Settings.from_env(env), database), raise_server_exceptions=False) as client:
        yield api_of_new_account(client, database, "quota")


def _on_disk(tmp_path: Path, account_id: str) -> int:
    """The bytes the store holds for the account once what belongs to nobody (the import's
    file, the uploads copied into cards) is deleted: its cards' files and what they keep."""
    embedded.wait_until_idle()
    delete_doomed_objects.fn()
    folder = tmp_path / "blobs" / "objects" / "accounts" / account_id
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def test_a_restore_stores_nothing_past_the_accounts_quota(
    quota_api: Api, database: Database, tmp_path: Path
) -> None:
    files = {f"files/crd_{n}/big.txt": b"a" * BIG for n in range(1, 11)}
    data = _deflated(tmp_path, [_big_note(n, f"files/crd_{n}/big.txt") for n in range(1, 11)], files)
    assert len(data) < 40_000  # ten megabytes in a small archive
    sums: list[str] = []

    def summing(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if re.search(r"\bsum\s*\(", statement, re.IGNORECASE):
            sums.append(statement)

    event.listen(database.engine, "before_cursor_execute", summing)
    try:
        job = imported(quota_api, data, format="cardvault")
    finally:
        event.remove(database.engine, "before_cursor_execute", summing)
    assert sums == []  # the quota is read from the account's counters, never summed
    assert (job["status"], job["created"], job["failed"]) == ("completed", 3, 7), job
    assert all("quota" in failure["reason"] for failure in job["failures"]), job["failures"]
    stored_bytes = _on_disk(tmp_path, quota_api.account_id)
    assert 3 * BIG <= stored_bytes <= QUOTA
    counters = assert_counters_hold(
        database, quota_api.account_id, store=broker.services_of(broker.broker).blobs
    )
    assert counters == [(0, stored_bytes)]


def test_an_archive_whose_cards_share_a_file_is_refused_whole(
    quota_api: Api, database: Database, tmp_path: Path
) -> None:
    shared = "files/crd_1/big.txt"
    data = _deflated(tmp_path, [_big_note(n, shared) for n in range(1, 11)], {shared: b"a" * BIG})
    job = imported(quota_api, data, format="cardvault")
    assert job["status"] == "failed" and shared in job["error"] and "belongs to one card" in job["error"]
    assert _count(database, quota_api.account_id) == 0 and _on_disk(tmp_path, quota_api.account_id) == 0
    assert assert_counters_hold(database, quota_api.account_id) == [(0, 0)]


def test_a_restored_capture_counts_and_one_past_the_quota_is_refused(
    quota_api: Api, database: Database, tmp_path: Path
) -> None:
    def link(number: int) -> dict[str, Any]:
        url = f"https://example.com/{number}"
        roles = {
            role: {"path": f"{role}s/crd_{number}/{archive.CAPTURE_ROLES[role][1]}"}
            for role in ("archive", "reader")
        }
        return _card(number, type="link", content=url, url=url, **roles)

    page, reader = b"MIME-Version: 1.0\r\n" + b"p" * (BIG - 19), b"words " * 100_000  # 1 MB and 0.6 MB
    files = {}
    for number in (1, 2):
        files[f"archives/crd_{number}/page.mhtml"], files[f"readers/crd_{number}/reader.md"] = page, reader
    job = imported(quota_api, _deflated(tmp_path, [link(1), link(2)], files), format="cardvault")
    assert (job["status"], job["created"], job["failed"]) == ("completed", 1, 1), job
    assert "quota" in job["failures"][0]["reason"] and job["failures"][0]["entry"] == "card crd_2"
    stored_bytes = _on_disk(tmp_path, quota_api.account_id)
    assert stored_bytes == len(page) + len(reader)  # the refused card's capture: never written
    counters = assert_counters_hold(
        database, quota_api.account_id, store=broker.services_of(broker.broker).blobs
    )
    assert counters == [(0, stored_bytes)]
