"""ZIP exports (startExport, getLatestExport, getExport, cancelExport) on each database and blob
store, with the embedded worker making the archive: what the archive holds, one export at a
time and once a week, cancel, expiry, another account's export, and every refusal's body."""

from __future__ import annotations

import hashlib
import io
import json
import time
import zipfile
from typing import Any
from urllib.parse import parse_qs, urlparse

from sqlalchemy import update

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.domain.db import Database
from cardvault.domain.files.quotas import NO_QUOTAS
from cardvault.domain.models import ExportJob
from cardvault.domain.portability.archive import ROLES
from cardvault.domain.portability.exports.jobs import WEEK_MS
from cardvault.workers import exports as export_worker
from tests.conftest import Api
from tests.unit.domain.cards.test_captions import VTT, attach
from tests.unit.handlers.test_uploads import _get, png
from tests.unit.workers.stages.test_media import file_card

PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"


def wait_for_export(api: Api, *, until: tuple[str, ...] = ("ready", "failed", "canceled")) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        job = api.get("/v1/exports/latest").json()["job"]
        if job is not None and job["status"] in until:
            return job  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def download(api: Api, job: dict[str, Any]) -> zipfile.ZipFile:
    got = _get(api, job["downloadUrl"])
    assert got.status_code == 200, got.text
    assert got.headers["Content-Type"] == "application/zip"
    assert got.headers["Content-Disposition"].startswith("attachment;")
    assert len(got.content) == job["sizeBytes"]
    return zipfile.ZipFile(io.BytesIO(got.content))


def verified(archive: zipfile.ZipFile) -> dict[str, Any]:
    """The manifest, once every file it names was checked against its size and sha256."""
    assert archive.testzip() is None
    manifest = json.loads(archive.read("manifest.json"))
    names = set(archive.namelist())
    for entry in manifest["files"]:
        data = archive.read(entry["path"])
        assert len(data) == entry["size"], entry
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry
    assert names == {e["path"] for e in manifest["files"]} | {"manifest.json"}
    return manifest  # type: ignore[no-any-return]


def started(api: Api) -> dict[str, Any]:
    answer = api.post("/v1/exports")
    assert answer.status_code == 202, answer.text
    assert answer.headers["Location"] == f"/v1/exports/{answer.json()['job']['id']}"
    return answer.json()["job"]  # type: ignore[no-any-return]


class TestTheArchive:
    def test_holds_every_card_folder_and_file_with_their_sha256(self, files_api: Api, tmp_path: Any) -> None:
        text = files_api.create(content="# Notes\nbuy *flour*", tags=["Kitchen", "todo"])
        link = files_api.create(url="https://example.com/bread", notes="to read")
        folder = files_api.post("/v1/folders", json={"name": "Recipes", "color": "red"}).json()
        assert (
            files_api.post(f"/v1/folders/{folder['id']}/cards", json={"cardIds": [text["id"]]}).status_code
            == 200
        )
        files_api.patch(f"/v1/cards/{link['id']}/favorite", json={"isFavorited": True})
        image = file_card(files_api, png(), "Crème brûlée (1).png", "image/png")
        document = file_card(files_api, PDF, "report.pdf", "application/pdf")
        files_api.post(f"/v1/cards/{document}/trash")
        job = started(files_api)
        assert job["status"] == "pending" and job["downloadUrl"] is None

        job = wait_for_export(files_api)
        assert job["status"] == "ready", job
        assert (job["cardCount"], job["processedCount"], job["filesIncluded"], job["filesOmitted"]) == (
            4,
            4,
            2,
            0,
        )
        assert job["expiresAt"] == job["completedAt"] + WEEK_MS
        archive = download(files_api, job)
        manifest = verified(archive)
        assert manifest["counts"] == {"cards": 4, "folders": 1, "filesIncluded": 2, "filesOmitted": 0}
        assert manifest["exportId"] == job["id"] and manifest["omitted"] == []
        cards = {c["id"]: c for c in json.loads(archive.read("cards.json"))["cards"]}
        assert set(cards) == {text["id"], link["id"], image, document}
        assert cards[text["id"]]["content"] == "# Notes\nbuy *flour*"
        assert cards[text["id"]]["tags"] == ["Kitchen", "todo"]
        assert cards[text["id"]]["folderIds"] == [folder["id"]]
        assert cards[link["id"]]["isFavorited"] is True and cards[link["id"]]["notes"] == "to read"
        assert cards[document]["deletedAt"] is not None
        assert cards[image]["file"]["path"] == f"files/{image}/Creme-brulee-1-.png"
        assert archive.read(cards[image]["file"]["path"]) == png()
        assert archive.read(cards[document]["file"]["path"]) == PDF
        assert cards[text["id"]]["file"] is None
        folders = json.loads(archive.read("folders.json"))["folders"]
        assert [(f["id"], f["name"], f["color"]) for f in folders] == [(folder["id"], "Recipes", "red")]

    def test_holds_a_caption_file_beside_its_card_file(self, files_api: Api, tmp_path: Any) -> None:
        from tests.unit.domain.cards.test_captions import audio_card

        card_id = audio_card(files_api, tmp_path)
        assert attach(files_api, card_id, VTT.encode()).status_code == 200
        started(files_api)
        archive = download(files_api, wait_for_export(files_api))
        verified(archive)
        card = json.loads(archive.read("cards.json"))["cards"][0]
        assert card["captions"]["path"] == f"captions/{card_id}/talk.vtt"
        assert archive.read(card["captions"]["path"]) == VTT.encode()
        assert card["captionsFile"]["cueCount"] == 2

    def test_a_file_gone_from_the_store_is_left_out_and_counted(
        self, files_api: Api, files_store: BlobStore
    ) -> None:
        image = file_card(files_api, png(), "a.png", "image/png")
        kept = file_card(files_api, PDF, "kept.pdf", "application/pdf")
        files_store.delete(_file_keys(files_store, files_api, exclude=kept))
        started(files_api)
        job = wait_for_export(files_api)
        assert (job["status"], job["filesIncluded"], job["filesOmitted"]) == ("ready", 1, 1)
        archive = download(files_api, job)
        manifest = verified(archive)
        assert manifest["omitted"] == [
            {"cardId": image, "role": "file", "fileName": "a.png", "reason": "missing"}
        ]
        cards = {c["id"]: c for c in json.loads(archive.read("cards.json"))["cards"]}
        assert cards[image]["file"] is None and cards[kept]["file"] is not None

    def test_an_empty_account_exports_an_empty_archive(self, files_api: Api) -> None:
        started(files_api)
        archive = download(files_api, wait_for_export(files_api))
        manifest = verified(archive)
        assert manifest["counts"] == {"cards": 0, "folders": 0, "filesIncluded": 0, "filesOmitted": 0}
        assert json.loads(archive.read("cards.json")) == {"formatVersion": 1, "cards": []}


def _file_keys(store: BlobStore, api: Api, *, exclude: str) -> list[str]:
    kept = api.get(f"/v1/cards/{exclude}").json()
    return [k for k in store.keys(f"accounts/{api.account_id}/files/") if kept["fileName"] not in k]


class TestOneAtATimeOnceAWeek:
    def test_a_second_start_while_one_runs_answers_409_with_the_job(
        self, files_api: Api, database: Database
    ) -> None:
        job = started(files_api)
        _hold(database, job["id"])
        again = files_api.post("/v1/exports")
        assert again.status_code == 409, again.text
        body = again.json()
        assert body["code"] == "EXPORT_RUNNING" and body["retryAt"] is None
        assert body["details"]["exportId"] == job["id"] and body["details"]["job"]["id"] == job["id"]

    def test_a_start_within_a_week_of_a_ready_export_answers_429_until_the_week_is_over(
        self, files_api: Api, database: Database
    ) -> None:
        started(files_api)
        job = wait_for_export(files_api)
        again = files_api.post("/v1/exports")
        assert again.status_code == 429, again.text
        retry_at = job["completedAt"] + WEEK_MS
        assert again.json() == {
            "code": "RATE_LIMITED",
            "error": "One export a week: the last became ready less than 7 days ago.",
            "details": {"policy": "export-quota", "exportId": job["id"]},
            "requestId": again.headers["X-Request-Id"],
            "retryAt": retry_at,
        }
        assert abs(int(again.headers["Retry-After"]) - (retry_at / 1000 - time.time())) <= 2
        latest = files_api.get("/v1/exports/latest").json()
        assert (latest["canStart"], latest["nextStartAt"]) == (False, retry_at)
        with database.transaction() as session:
            session.execute(
                update(ExportJob)
                .where(ExportJob.id == job["id"])
                .values(completed_at=ExportJob.completed_at - WEEK_MS)
            )
        assert files_api.get("/v1/exports/latest").json()["canStart"] is True
        assert files_api.post("/v1/exports").status_code == 202

    def test_an_export_that_left_out_unreadable_files_does_not_count(
        self, files_api: Api, database: Database
    ) -> None:
        started(files_api)
        job = wait_for_export(files_api)
        with database.transaction() as session:
            session.execute(update(ExportJob).where(ExportJob.id == job["id"]).values(files_unreadable=1))
        assert files_api.get("/v1/exports/latest").json()["canStart"] is True
        assert files_api.post("/v1/exports").status_code == 202

    def test_a_canceled_export_does_not_count(self, files_api: Api, database: Database) -> None:
        job = started(files_api)
        _hold(database, job["id"])
        canceled = files_api.post(f"/v1/exports/{job['id']}/cancel")
        assert canceled.status_code == 200, canceled.text
        assert canceled.json()["job"]["status"] == "canceled" and canceled.json()["job"]["completedAt"]
        assert files_api.post(f"/v1/exports/{job['id']}/cancel").json() == canceled.json()
        assert files_api.get("/v1/exports/latest").json()["canStart"] is True
        assert files_api.post("/v1/exports").status_code == 202


def _hold(database: Database, job_id: str) -> None:
    """Keep the job running as if a worker held it (a fresh lease and heartbeat), even if the
    embedded worker finished it already."""
    with database.transaction() as session:
        session.execute(
            update(ExportJob)
            .where(ExportJob.id == job_id)
            .values(
                status="running",
                stage="snapshotting",
                lease="held",
                heartbeat_at=int(time.time() * 1000) + 600_000,
                active_account_id=ExportJob.account_id,
                completed_at=None,
                expires_at=None,
            )
        )


class TestIdempotencyKey:
    def test_a_start_sent_again_with_its_key_answers_the_same_job(
        self, files_api: Api, database: Database
    ) -> None:
        first = files_api.post("/v1/exports", headers={"Idempotency-Key": "export-1"})
        assert first.status_code == 202
        _hold(database, first.json()["job"]["id"])
        again = files_api.post("/v1/exports", headers={"Idempotency-Key": "export-1"})
        assert again.status_code == 202 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == first.json() and again.headers["Location"] == first.headers["Location"]
        other = files_api.post("/v1/exports", headers={"Idempotency-Key": "export-2"})
        assert other.status_code == 409 and other.json()["code"] == "EXPORT_RUNNING"


class TestLatestAndGet:
    def test_latest_is_null_before_any_export(self, files_api: Api) -> None:
        answer = files_api.get("/v1/exports/latest")
        assert answer.status_code == 200
        assert answer.json() == {"job": None, "canStart": True, "nextStartAt": None}

    def test_another_accounts_export_answers_404_like_a_missing_one(
        self, files_api: Api, new_api: Any
    ) -> None:
        job = started(files_api)
        other = new_api()
        for answer in (other.get(f"/v1/exports/{job['id']}"), other.post(f"/v1/exports/{job['id']}/cancel")):
            assert answer.status_code == 404
            assert answer.json()["code"] == "NOT_FOUND" and answer.json()["error"] == "Export not found."
        assert other.get("/v1/exports/latest").json()["job"] is None

    def test_a_ready_export_past_its_time_shows_expired_and_its_archive_is_deleted(
        self, files_api: Api, files_store: BlobStore, database: Database
    ) -> None:
        started(files_api)
        job = wait_for_export(files_api)
        assert list(files_store.keys(f"exports/{files_api.account_id}/"))
        with database.transaction() as session:
            session.execute(update(ExportJob).where(ExportJob.id == job["id"]).values(expires_at=1))
        shown = files_api.get(f"/v1/exports/{job['id']}").json()["job"]
        assert (shown["status"], shown["downloadUrl"]) == ("expired", None)
        export_worker.expire_exports()
        assert list(files_store.keys(f"exports/{files_api.account_id}/")) == []
        assert files_api.get(f"/v1/exports/{job['id']}").json()["job"]["status"] == "expired"

    def test_a_download_url_ends_with_its_archive(
        self, files_api: Api, files_store: BlobStore, database: Database
    ) -> None:
        started(files_api)
        job = wait_for_export(files_api)
        with database.transaction() as session:
            soon = int(time.time() * 1000) + 60_000
            session.execute(update(ExportJob).where(ExportJob.id == job["id"]).values(expires_at=soon))
        url = files_api.get(f"/v1/exports/{job['id']}").json()["job"]["downloadUrl"]
        if isinstance(files_store, LocalDiskStore):
            token = url.rsplit("/", 1)[1]
            assert files_store.download_claims(token)["e"] <= soon / 1000 + 1
        else:
            assert int(parse_qs(urlparse(url).query)["X-Amz-Expires"][0]) <= 60

    def test_cancel_of_a_ready_export_answers_409(self, files_api: Api) -> None:
        started(files_api)
        job = wait_for_export(files_api)
        answer = files_api.post(f"/v1/exports/{job['id']}/cancel")
        assert answer.status_code == 409
        assert answer.json()["code"] == "EXPORT_FINISHED" and answer.json()["details"] == {"status": "ready"}


def settled(api: Api, card_id: str) -> None:
    """Wait until the card's processing stages (if it has any) are done with."""
    deadline = time.monotonic() + 60
    while (api.get(f"/v1/cards/{card_id}/extended").json()["processingStatus"] or {}).get("state") in (
        "pending",
        "running",
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _comparable(archive: zipfile.ZipFile) -> list[dict[str, Any]]:
    """The archive's cards without what an import renews: ids, and the paths naming them; each
    card's folders by name, its files by size and sha256."""
    folders = {f["id"]: f["name"] for f in json.loads(archive.read("folders.json"))["folders"]}
    shown = []
    for card in json.loads(archive.read("cards.json"))["cards"]:
        card = {k: v for k, v in card.items() if k != "id"}
        card["folderIds"] = sorted(folders[f] for f in card["folderIds"])
        for role in ROLES:
            if card[role] is not None:
                card[role] = {k: v for k, v in card[role].items() if k != "path"}
        shown.append(card)
    return sorted(shown, key=lambda c: (c["createdAt"], c["content"], c["type"]))


class TestImportReadsAnExportBack:
    def test_every_kind_of_card_comes_back_with_its_files_tags_folders_and_flags(
        self, files_api: Api, new_api: Any, files_store: BlobStore, database: Database, tmp_path: Any
    ) -> None:
        from cardvault.handlers.cli import restore
        from harness import media_files
        from tests.unit.domain.cards.test_captions import audio_card
        from tests.unit.handlers.test_uploads import processed

        api = files_api
        text = api.create(content="# Plan\n- knead", tags=["Bread", "weekend"], notes="from grandma")
        api.create(content='"Less is more." - Mies', cardType="quote")
        api.create(content="#112233 #445566", cardType="palette")
        link = api.create(url="https://example.com/a", tags=["read"])
        image = file_card(api, png(), "Crème.png", "image/png")
        video = file_card(api, media_files.video(tmp_path / "clip.mp4").read_bytes(), "clip.mp4", "video/mp4")
        audio = audio_card(api, tmp_path)
        assert attach(api, audio, VTT.encode()).status_code == 200
        document = file_card(api, PDF, "report.pdf", "application/pdf")
        for card_id in (image, video, audio, document):
            processed(api, card_id)
        folder = api.post("/v1/folders", json={"name": "Kitchen", "color": "green"}).json()["id"]
        api.post("/v1/folders", json={"name": "Empty"})
        api.post(f"/v1/folders/{folder}/cards", json={"cardIds": [text["id"], image, audio]})
        api.patch(f"/v1/cards/{text['id']}/favorite", json={"isFavorited": True})
        api.post(f"/v1/cards/{link['id']}/done")
        api.post(f"/v1/cards/{video}/archive")
        api.post(f"/v1/cards/{document}/trash")
        started(api)
        first = download(api, wait_for_export(api))
        verified(first)
        path = tmp_path / "export.zip"
        path.write_bytes(_get(api, wait_for_export(api)["downloadUrl"]).content)

        other = new_api()
        out = io.StringIO()
        assert (
            restore.run(
                database, files_store, account_id=other.account_id, path=path, quotas=NO_QUOTAS, out=out
            )
            == 0
        )
        assert out.getvalue().splitlines() == [
            "imported 8/8 cards",
            "Imported 8 cards, 2 folders and 5 files.",
        ]
        # The stages made again (renditions, posters) run before the second export.
        for card in other.get("/v1/cards", params={"archived": "include", "limit": 50}).json()["items"]:
            settled(other, card["id"])
        started(other)
        second = download(other, wait_for_export(other))
        verified(second)
        for restored, original in zip(_comparable(second), _comparable(first), strict=True):
            assert {k: v for k, v in restored.items() if v != original[k]} == {}, original["type"]
        found = other.get("/v1/cards", params={"q": "knead"}).json()["items"]  # content and transcript
        assert sorted((c["type"], tuple(c["tags"])) for c in found) == [
            ("audio", ()),
            ("text", ("Bread", "weekend")),
        ]
        assert other.get("/v1/trash").json()["items"][0]["fileName"] == "report.pdf"
        folders = other.get("/v1/folders").json()["items"]
        assert {f["name"]: f["cardCount"] for f in folders} == {"Kitchen": 3, "Empty": 0}
