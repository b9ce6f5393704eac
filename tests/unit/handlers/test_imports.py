"""Imports over the API (startImport, getImport, listImports, cancelImport) on each database,
with the embedded worker taking the entries: a file of each format, the format told from its
bytes, the job's counts and report, one import at a time, another account's import, and
every refusal's body."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from cardvault.domain.db import Database
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.workers import broker, embedded
from cardvault.workers.imports import run_import
from tests.conftest import Api
from tests.unit.domain.portability.imports.formats.conftest import FIXTURES, fixture
from tests.unit.handlers.test_uploads import uploaded


def start(api: Api, data: bytes, name: str = "export", **body: Any) -> Any:
    key, etag = uploaded(api, data, name, "text/plain")
    return api.post("/v1/imports", json={"fileKey": key, "fileEtag": etag, **body})


def finished(api: Api, import_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        job = api.get(f"/v1/imports/{import_id}").json()["job"]
        if job["status"] not in import_jobs.ACTIVE:
            return job  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, job
        time.sleep(0.02)


def imported(api: Api, data: bytes, **body: Any) -> dict[str, Any]:
    started = start(api, data, **body)
    assert started.status_code == 202, started.text
    assert started.headers["Location"] == f"/v1/imports/{started.json()['job']['id']}"
    return finished(api, started.json()["job"]["id"])


def cards(api: Api) -> list[dict[str, Any]]:
    params = {"archived": "include", "sort": "oldest", "limit": 100, "include": "content"}
    return api.get("/v1/cards", params=params).json()["items"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "file_format", "count"),
    [
        ("netscape_chrome.html", "netscape", 5),
        ("netscape_firefox.html", "netscape", 5),
        ("netscape_raindrop.html", "netscape", 4),
        ("pocket.csv", "pocket", 5),
        ("pocket_legacy_ril_export.html", "pocket", 3),
        ("raindrop.csv", "raindrop", 4),
        ("instapaper.csv", "instapaper", 5),
        ("readwise.csv", "readwise", 4),
        ("karakeep.json", "karakeep", 4),
        ("linkwarden.json", "linkwarden", 4),
        ("wallabag.json", "wallabag", 4),
    ],
)
def test_each_format_is_told_from_its_bytes_and_taken_whole(
    api: Api, name: str, file_format: str, count: int
) -> None:
    job = imported(api, fixture(name))
    assert (job["status"], job["format"], job["found"], job["created"], job["failed"]) == (
        "completed",
        file_format,
        count,
        count,
        0,
    )
    assert len(cards(api)) == count and job["completedAt"] is not None


def test_a_raindrop_export_keeps_times_notes_highlights_folders_favorites_and_reports_covers(
    api: Api,
) -> None:
    job = imported(api, fixture("raindrop.csv"), format="raindrop")
    assert job["unmapped"] == {"cover": 2}
    by_title = {card["content"]: card for card in cards(api)}
    quoting = by_title["https://blog.example.net/2024/03/on-quoting"]
    rust = by_title["https://example.com/articles/async-rust?ref=feed&utm_source=newsletter"]
    docs = by_title["https://docs.example.io/guide/getting-started"]
    roads = by_title["https://de.example.org/stra%C3%9Fen-und-br%C3%BCcken"]
    assert (
        rust["createdAt"] == 1709302567482 and rust["isFavorited"] and rust["tags"] == ["rust", "programming"]
    )
    assert rust["notes"] == "Read before the team workshop.\nSecond line of the note."  # highlights apart
    kept = api.get(f"/v1/cards/{rust['id']}/annotations").json()["items"]
    assert [a["quote"] for a in kept] == [
        "Executors poll futures until they are ready.",
        "Nothing happens until a future is polled.",
    ]
    folders = {f["id"]: f["name"] for f in api.get("/v1/folders").json()["items"]}
    assert (
        [folders[i] for i in docs["folderIds"]]
        == ["Work / Projects"]
        == [folders[i] for i in roads["folderIds"]]
    )
    assert quoting["folderIds"] == []


def test_a_second_import_of_the_same_file_skips_every_entry(api: Api) -> None:
    imported(api, fixture("pocket.csv"))
    again = imported(api, fixture("pocket.csv"))
    assert (again["created"], again["skipped"]) == (0, 5) and len(cards(api)) == 5
    merged = imported(api, fixture("pocket.csv"), onDuplicate="merge")
    assert (merged["created"], merged["merged"]) == (0, 5)


def test_bad_entries_fail_alone_and_are_listed(api: Api) -> None:
    data = b"title,url,time_added,tags,status\n"
    data += b"A,javascript:alert(1),1,,unread\nB,data:text/html;base64,PHNjcmlwdD4=,1,,unread\n"
    data += b"C,https://example.com/c,1,,unread\nD,https://example.com/d,1,,unread,extra\n"
    job = imported(api, data, format="pocket")
    assert (job["found"], job["created"], job["failed"]) == (4, 1, 3)
    assert [f["entry"] for f in job["failures"]] == ["line 2", "line 3", "line 5"]
    assert "javascript: URL" in job["failures"][0]["reason"]


def test_listing_cancel_and_one_import_at_a_time(api: Api) -> None:
    first = start(api, fixture("pocket.csv"))
    second = start(api, fixture("pocket.csv"))
    if second.status_code == 409:  # the first was still pending or running
        assert second.json()["code"] == "IMPORT_RUNNING"
        assert second.json()["details"] == {"importId": first.json()["job"]["id"]}
    done = finished(api, first.json()["job"]["id"])
    refused = api.post(f"/v1/imports/{done['id']}/cancel")
    assert refused.status_code == 409 and refused.json()["code"] == "IMPORT_FINISHED"
    assert refused.json()["details"] == {"status": "completed"}
    later = imported(api, fixture("pocket.csv"))  # a second, once the first ended
    listed = api.get("/v1/imports", params={"limit": 1}).json()
    assert [j["id"] for j in listed["items"]] == [later["id"]] and listed["pageInfo"]["hasMore"]
    rest = api.get("/v1/imports", params={"cursor": listed["pageInfo"]["nextCursor"]}).json()
    assert done["id"] in [j["id"] for j in rest["items"]] and later["id"] not in [
        j["id"] for j in rest["items"]
    ]


def test_a_canceled_import_takes_nothing_more(api: Api, database: Database) -> None:
    embedded.wait_until_idle()  # the sweeper's first pass, which resumes every active import, is over
    with database.transaction() as session:  # a job no worker has picked up yet
        job = import_jobs.new_job(
            import_id=import_jobs.new_import_id(),
            account_id=api.account_id,
            file_format="pocket",
            on_duplicate="skip",
            file_name="pocket.csv",
            file_size=1,
            object_key=f"accounts/{api.account_id}/imports/x/pocket.csv",
        )
        session.add(job)
        import_id = job.id
    broker.services_of(broker.broker).blobs.put(
        f"accounts/{api.account_id}/imports/x/pocket.csv", fixture("pocket.csv"), content_type="text/csv"
    )
    canceled = api.post(f"/v1/imports/{import_id}/cancel")
    assert canceled.status_code == 200 and canceled.json()["job"]["status"] == "canceled", canceled.text
    assert canceled.json()["job"]["completedAt"] is not None
    again = api.post(f"/v1/imports/{import_id}/cancel")
    assert again.status_code == 200 and again.json() == canceled.json()
    run_import.fn(import_id)
    assert cards(api) == [] and api.get(f"/v1/imports/{import_id}").json()["job"]["found"] == 0


def test_refusals(api: Api, make_api: Callable[[], Api]) -> None:
    unknown = start(api, b"just some text\n")
    assert unknown.status_code == 400 and unknown.json()["code"] == "UNSUPPORTED_TYPE"
    key, etag = uploaded(api, fixture("pocket.csv"), "pocket.csv", "text/csv")
    wrong = api.post("/v1/imports", json={"fileKey": key, "fileEtag": '"other"'})
    assert wrong.status_code == 409 and wrong.json()["code"] == "UPLOAD_CHANGED"
    bad = api.post("/v1/imports", json={"fileKey": key, "fileEtag": etag, "format": "evernote"})
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_INPUT"
    other = make_api()
    stranger = other.post("/v1/imports", json={"fileKey": key, "fileEtag": etag})
    assert stranger.status_code == 404 and stranger.json()["code"] == "UPLOAD_NOT_FOUND"
    taken = api.post("/v1/imports", json={"fileKey": key, "fileEtag": etag})
    assert taken.status_code == 202, taken.text
    job = finished(api, taken.json()["job"]["id"])
    assert other.get(f"/v1/imports/{job['id']}").json()["code"] == "NOT_FOUND"
    assert other.post(f"/v1/imports/{job['id']}/cancel").status_code == 404
    assert other.get("/v1/imports").json()["items"] == []
    used = api.post("/v1/imports", json={"fileKey": key, "fileEtag": etag})
    assert used.status_code == 409 and used.json()["code"] == "UPLOAD_USED"


def test_an_export_over_the_import_limit_is_refused_before_it_is_copied(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = fixture("pocket.csv")
    monkeypatch.setattr(import_jobs, "MAX_FILE_BYTES", len(data) - 1)  # 256 MiB, in miniature
    refused = start(api, data)
    assert refused.status_code == 413 and refused.json()["code"] == "FILE_TOO_LARGE", refused.text
    assert refused.json()["details"] == {"limitBytes": len(data) - 1, "actualBytes": len(data)}
    assert api.get("/v1/imports").json()["items"] == []
    monkeypatch.setattr(import_jobs, "MAX_FILE_BYTES", len(data))  # at the limit: taken
    assert imported(api, data)["status"] == "completed"


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _fixture_zip(folder: str) -> bytes:
    root = FIXTURES / folder
    return _zip(
        {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    )


def test_pocket_and_omnivore_zips_are_told_and_their_highlights_kept(api: Api) -> None:
    pocket = imported(api, _fixture_zip("pocket2025"))
    assert (pocket["status"], pocket["format"], pocket["created"], pocket["failed"]) == (
        "completed",
        "pocket",
        5,
        0,
    )
    assert pocket["unmapped"] == {"collections": 1}
    omnivore = imported(api, _fixture_zip("omnivore"))
    assert (omnivore["status"], omnivore["format"], omnivore["created"], omnivore["failed"]) == (
        "completed",
        "omnivore",
        4,
        0,
    )
    assert omnivore["unmapped"]["content"] == 4 and omnivore["unmapped"]["highlight labels"] == 1
    by_url = {card["content"]: card for card in cards(api)}
    work = by_url["https://paulgraham.com/greatwork.html"]
    quotes = [a["quote"] for a in api.get(f"/v1/cards/{work['id']}/annotations").json()["items"]]
    assert quotes[0] == "The way to figure out what to work on is by working." and len(quotes) == 2
    assert "The way to figure out" not in (work["notes"] or "")
    breitling = next(url for url in by_url if "breitling" in url)
    assert by_url[breitling]["tags"] == ["RSS"]
    assert api.get(f"/v1/cards/{by_url[breitling]['id']}/extended").json()["isArchived"]
    (noted,) = api.get(f"/v1/cards/{by_url[breitling]['id']}/annotations").json()["items"]
    assert noted["note"] == "Voir aussi l’article sur Swatch — à relire." and not by_url[breitling]["notes"]


def test_a_hostile_zip_fails_its_bad_members_alone_and_takes_the_rest(api: Api) -> None:
    row = b"title,url,time_added,tags,status\nKept,https://kept.example/,1700000000,,unread\n"
    members = {
        "../part_000001.csv": row,
        "part_000000.csv": row,
        "part_000002.csv": b"title,url,time_added,tags,status\n" + b"x" * (64 * 1024 * 1024),
        "annotations/part_000000.json": b"[" + b" " * (64 * 1024 * 1024),
    }
    data = _zip(members)
    assert len(data) < 512 * 1024  # 128 MiB decompressed from under 512 KiB
    job = imported(api, data)
    assert (job["status"], job["format"], job["created"]) == ("completed", "pocket", 1)
    assert [(f["entry"], f["reason"][:30]) for f in job["failures"]] == [
        ("member '../part_000001.csv'", "its name is not a plain path i"),
        ("annotations/part_000000.json", "the highlights are over 32 MiB"),
        ("part_000002.csv, line 2", "a line of the file is over 102"),
    ]
    assert [card["content"] for card in cards(api)] == ["https://kept.example/"]
