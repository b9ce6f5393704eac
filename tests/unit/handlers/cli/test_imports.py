"""``cardvault import`` of another service's export: an import job run in this process (the
restore of our own archive is test_restore.py's)."""

import json
import zipfile
from pathlib import Path

import pytest
import redis

from cardvault.domain.database import open_database
from cardvault.domain.webhooks import endpoints
from tests.conftest import IN_CI, shared_redis_url
from tests.unit.handlers.cli.test_restore import _account, _cards
from tests.unit.test_cli import run


def test_another_services_export_is_imported_as_a_job_told_by_its_bytes(tmp_path: Path) -> None:
    account_id = _account(tmp_path)
    bookmarks = Path(__file__).parents[3] / "fixtures" / "imports" / "netscape_firefox.html"
    result = run(tmp_path, "import", str(bookmarks), "--account", "Ada")
    assert result.returncode == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith(
        "Imported 5 cards (netscape): 5 entries, 0 merged, 0 skipped, 0 failed; import imp_"
    )
    assert last.endswith(" completed.")
    assert (
        sorted(c.url or "" for c in _cards(tmp_path, account_id))[0]
        == "https://blog.example.net/2024/03/on-quoting"
    )
    again = run(tmp_path, "import", str(bookmarks), "--account", "Ada", "--on-duplicate", "skip")
    assert again.returncode == 0 and "0 cards" in again.stdout and "5 skipped" in again.stdout


def test_an_export_whose_format_cannot_be_told_is_named_and_a_failed_entry_reported(tmp_path: Path) -> None:
    _account(tmp_path)
    (tmp_path / "list.txt").write_text("just some text\n")
    result = run(tmp_path, "import", str(tmp_path / "list.txt"), "--account", "Ada")
    assert result.returncode == 1 and "cannot be told from its bytes" in result.stderr
    (tmp_path / "pocket.csv").write_text("title,url,time_added,tags,status\nA,javascript:x,1,,unread\n")
    result = run(tmp_path, "import", str(tmp_path / "pocket.csv"), "--account", "Ada", "--format", "pocket")
    assert result.returncode == 1 and "line 2 was not imported" in result.stderr


def test_a_zip_of_another_service_is_imported_as_a_job_not_restored(tmp_path: Path) -> None:
    _account(tmp_path)
    root = Path(__file__).parents[3] / "fixtures" / "imports" / "omnivore"
    archive = tmp_path / "0b8f3c5e.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                out.write(path, path.relative_to(root).as_posix())
    result = run(tmp_path, "import", str(archive), "--account", "Ada")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("Imported 4 cards (omnivore): 4 entries")


def test_another_services_export_sends_the_webhooks_of_its_cards(tmp_path: Path) -> None:
    """The command's changes reach the account's endpoints: its process connects the webhooks'
    dispatcher (cardvault.bootstrap), which a worker on the same Redis then runs."""
    url = shared_redis_url()
    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        if IN_CI:
            pytest.fail(f"CI=true needs Redis at {url}: {exc}")
        pytest.skip(f"no Redis at {url}: {exc}")
    client.flushdb()
    account_id = _account(tmp_path)
    db = open_database(f"sqlite:///{tmp_path / 'cardvault.db'}")
    try:
        with db.transaction() as session:
            endpoints.create(
                session, account_id=account_id, url="https://hooks.example/", events=["*"], description=""
            )
    finally:
        db.dispose()
    bookmarks = Path(__file__).parents[3] / "fixtures" / "imports" / "netscape_firefox.html"
    try:
        result = run(tmp_path, "import", str(bookmarks), "--account", "Ada", CARDVAULT_REDIS_URL=url)
        assert result.returncode == 0, result.stderr
        sent = [json.loads(raw) for raw in client.hvals("dramatiq:webhooks.msgs")]
    finally:
        client.flushdb()
    assert {(m["actor_name"], tuple(m["args"])) for m in sent} == {("dispatch_webhooks", (account_id,))}
