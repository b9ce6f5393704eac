"""``cardvault import``: progress on a terminal and in logs, and archives that are not what
their manifest says (the round trip of a real export is in tests/unit/handlers/test_exports.py)."""

from __future__ import annotations

import hashlib
import os
import pty
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from cardvault.domain import archive
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from tests.unit.handlers.test_uploads import png
from tests.unit.test_cli import run


def _card(number: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"crd_{number}",
        "type": "text",
        "content": f"note {number}",
        "tags": ["imported"],
        "createdAt": 1_700_000_000_000 + number,
        "updatedAt": 1_700_000_000_000 + number,
        "folderIds": ["fld_1"],
        "file": None,
        "captions": None,
        **fields,
    }


def make_archive(
    path: Path, cards: list[dict[str, Any]], files: dict[str, bytes] | None = None, **lies: bytes
) -> Path:
    """An archive of these cards, one folder and these files; ``lies`` replace a member's bytes
    after the manifest was written."""
    members = {path_: data for path_, data in (files or {}).items()}
    members["cards.json"] = b"".join(archive.json_document("cards", cards))
    members["folders.json"] = b"".join(
        archive.json_document("folders", [{"id": "fld_1", "name": "Imported", "color": None}])
    )
    entries = [
        {"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in members.items()
    ]
    manifest = archive.manifest(export_id="exp_1", created_at=1, counts={}, files=entries, omitted=[])
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, lies.get(name.replace(".", "_").replace("/", "_"), data))
        zf.writestr("manifest.json", b"".join(manifest))
    return path


def _account(tmp_path: Path) -> str:
    created = run(tmp_path, "accounts", "create", "Ada")
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def _cards(tmp_path: Path, account_id: str) -> list[Card]:
    db = Database.from_url(f"sqlite:///{tmp_path / 'cardvault.db'}")
    try:
        with db.transaction(write=False) as session:
            found = session.query(Card).filter_by(account_id=account_id).order_by(Card.created_at).all()
            session.expunge_all()
            return found
    finally:
        db.dispose()


def test_without_a_terminal_progress_is_plain_lines(tmp_path: Path) -> None:
    account_id = _account(tmp_path)
    zipped = make_archive(tmp_path / "a.zip", [_card(n) for n in range(1, 251)])
    result = run(tmp_path, "import", str(zipped), "--account", "Ada")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "imported 100/250 cards",
        "imported 200/250 cards",
        "imported 250/250 cards",
        "Imported 250 cards, 1 folders and 0 files.",
    ]
    restored = _cards(tmp_path, account_id)
    assert [c.content for c in restored[:2]] == ["note 1", "note 2"]
    assert restored[0].created_at == 1_700_000_000_001 and restored[0].tags == ["imported"]


def test_on_a_terminal_progress_is_a_bar(tmp_path: Path) -> None:
    _account(tmp_path)
    zipped = make_archive(tmp_path / "a.zip", [_card(n) for n in range(1, 4)])
    leader, follower = pty.openpty()
    env = {**os.environ, "CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_DATABASE_URL": "", "TERM": "xterm"}
    child = subprocess.Popen(
        [sys.executable, "-m", "cardvault.cli", "import", str(zipped), "--account", "Ada"],
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        shown += chunk
    assert child.wait(timeout=120) == 0, shown
    text = shown.decode()
    assert "Importing cards" in text and "3/3" in text and "━" in text
    assert "imported 3/3 cards" not in text  # the plain lines are for logs only
    assert "Imported 3 cards, 1 folders and 0 files." in text


def test_an_archive_whose_cards_json_is_not_the_manifests_is_refused_whole(tmp_path: Path) -> None:
    account_id = _account(tmp_path)
    zipped = make_archive(tmp_path / "a.zip", [_card(1)], cards_json=b'{"formatVersion":1,"cards":[]}')
    result = run(tmp_path, "import", str(zipped), "--account", "Ada")
    assert result.returncode == 1
    assert "cards.json is not the file the manifest names" in result.stderr
    assert _cards(tmp_path, account_id) == []


def test_a_file_that_is_not_the_manifests_fails_its_card_and_the_others_are_imported(tmp_path: Path) -> None:
    account_id = _account(tmp_path)
    body = png()
    broken = _card(
        2,
        type="image",
        content="",
        fileName="a.png",
        mimeType="image/png",
        file={"path": "files/crd_2/a.png"},
    )
    zipped = make_archive(
        tmp_path / "a.zip",
        [_card(1), broken],
        {"files/crd_2/a.png": body},
        files_crd_2_a_png=body[:-1] + b"!",
    )
    result = run(tmp_path, "import", str(zipped), "--account", "Ada")
    assert result.returncode == 1
    assert (
        "card crd_2 was not imported: files/crd_2/a.png is not the file the manifest names" in result.stderr
    )
    assert [c.content for c in _cards(tmp_path, account_id)] == ["note 1"]


def test_a_file_that_is_no_zip_is_named(tmp_path: Path) -> None:
    _account(tmp_path)
    (tmp_path / "a.zip").write_text("not a zip")
    result = run(tmp_path, "import", str(tmp_path / "a.zip"), "--account", "Ada")
    assert result.returncode == 1 and "is not a ZIP archive" in result.stderr


def test_an_unknown_account_is_named(tmp_path: Path) -> None:
    zipped = make_archive(tmp_path / "a.zip", [_card(1)])
    result = run(tmp_path, "import", str(zipped), "--account", "nobody")
    assert result.returncode == 1 and "nobody" in result.stderr
