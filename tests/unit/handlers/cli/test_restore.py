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

import pytest
from sqlalchemy import select

from cardvault.adapters.blobs import store_from_settings
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidInput
from cardvault.domain.models import Card, CardStage, Folder
from cardvault.domain.portability import archive
from cardvault.domain.portability.restore import captures
from cardvault.domain.portability.restore import checks as restore_checks
from cardvault.handlers.cli import restore as cli_restore
from cardvault.settings import Settings
from cardvault.workers.restores import quotas_of
from tests.unit.domain.files.test_quotas import assert_counters_hold
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
    path: Path,
    cards: list[dict[str, Any]],
    files: dict[str, bytes] | None = None,
    folder: dict[str, Any] | None = None,
    **lies: bytes,
) -> Path:
    """An archive of these cards, one folder and these files; ``lies`` replace a member's bytes
    after the manifest was written."""
    members = {path_: data for path_, data in (files or {}).items()}
    members["cards.json"] = b"".join(archive.json_document("cards", cards))
    members["folders.json"] = b"".join(
        archive.json_document("folders", [folder or {"id": "fld_1", "name": "Imported", "color": None}])
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
    db = open_database(f"sqlite:///{tmp_path / 'cardvault.db'}")
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


class TestHostileArchives:
    """Crafted archives: refused whole when the archive is wrong, card by card when a card is,
    never with a traceback, never leaving half a card; what the API could not show is dropped."""

    @staticmethod
    def restore(database: Database, settings: Settings, account_id: str, path: Path) -> cli_restore.Outcome:
        return cli_restore.import_archive(
            database,
            store_from_settings(settings),
            account_id=account_id,
            path=path,
            quotas=quotas_of(settings),
        )

    @staticmethod
    def cards_of(database: Database, account_id: str) -> list[Card]:
        with database.transaction(write=False) as session:
            found = list(
                session.scalars(select(Card).where(Card.account_id == account_id).order_by(Card.created_at))
            )
            session.expunge_all()
            return found

    def test_a_manifest_naming_a_file_the_archive_lacks_refuses_it_whole(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        path = make_archive(tmp_path / "a.zip", [_card(1)], {"files/x/a.png": png()})
        with zipfile.ZipFile(path) as zf:
            members = {n: zf.read(n) for n in zf.namelist() if n != "files/x/a.png"}
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
        with pytest.raises(InvalidInput, match="does not hold"):
            self.restore(database, settings, account_id, path)
        assert self.cards_of(database, account_id) == []

    def test_a_manifest_that_inflates_past_its_limit_is_refused_unread(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        path = tmp_path / "bomb.zip"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", b" " * (restore_checks.MAX_MANIFEST_BYTES + 1))
        assert path.stat().st_size < 1024 * 1024
        with pytest.raises(InvalidInput, match="over"):
            self.restore(database, settings, account_id, path)

    @pytest.mark.parametrize(
        ("fields", "why"),
        [
            ({"type": "bogus"}, "not a card type"),
            ({"url": "javascript:alert(1)"}, "not an http or https URL"),
            ({"tags": "x"}, "not a list of strings"),
            ({"createdAt": -1}, "not a whole number"),
            ({"isFavorited": "yes"}, "not true or false"),
            ({"captions": {"path": "captions/crd_2/a.vtt"}}, "Only an audio or video card"),
            ({"screenshot": {"path": "screenshots/crd_2/screenshot.webp"}}, "Only a link card has a capture"),
        ],
    )
    def test_a_card_that_is_wrong_is_reported_and_nothing_of_it_is_kept(
        self,
        database: Database,
        settings: Settings,
        account_id: str,
        tmp_path: Path,
        fields: dict[str, Any],
        why: str,
    ) -> None:
        path = make_archive(tmp_path / "a.zip", [_card(1), _card(2, **fields), _card(3)])
        outcome = self.restore(database, settings, account_id, path)
        assert outcome.cards == 2 and len(outcome.failed) == 1
        assert outcome.failed[0][0] == "crd_2" and why in outcome.failed[0][1]
        assert [c.content for c in self.cards_of(database, account_id)] == ["note 1", "note 3"]

    @pytest.mark.parametrize(
        ("role", "data", "why"),
        [
            ("screenshot", png(), "not a WebP picture"),
            ("screenshot", b"RIFF\0\0\0\0WEBPVP8 broken", "screenshot cannot be read"),
            ("reader", b"\xff\xfe not utf-8", "not UTF-8 text"),
            ("archive", b"x" * (captures.MAX_BYTES["archive"] + 1), "is over"),
        ],
        ids=["png-as-screenshot", "broken-webp", "reader-not-utf8", "archive-over-its-cap"],
    )
    def test_a_capture_file_that_is_wrong_fails_its_link_card_only(
        self,
        database: Database,
        settings: Settings,
        account_id: str,
        tmp_path: Path,
        role: str,
        data: bytes,
        why: str,
    ) -> None:
        member = f"{role}s/crd_2/{archive.CAPTURE_ROLES[role][1]}"
        link = _card(
            2,
            type="link",
            content="https://example.com/a",
            url="https://example.com/a",
            **{role: {"path": member}},
        )
        path = make_archive(tmp_path / "a.zip", [_card(1), link], {member: data})
        outcome = self.restore(database, settings, account_id, path)
        assert [card_id for card_id, _ in outcome.failed] == ["crd_2"] and why in outcome.failed[0][1]
        assert [c.content for c in self.cards_of(database, account_id)] == ["note 1"]

    def test_a_card_failing_after_it_was_made_is_removed_again(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        audio = _card(
            2,
            type="audio",
            content="",
            deletedAt=1,
            captions={"path": "captions/crd_2/a.vtt"},
            captionsFile={"fileName": "a.vtt", "format": "vtt"},
            file=None,
        )
        path = make_archive(tmp_path / "a.zip", [_card(1), audio])
        outcome = self.restore(database, settings, account_id, path)
        assert outcome.failed and outcome.failed[0][0] == "crd_2"
        assert [c.content for c in self.cards_of(database, account_id)] == ["note 1"]

    def test_a_file_whose_bytes_fail_their_crc_fails_its_card_only(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        body = png()
        image = _card(
            2,
            type="image",
            content="",
            fileName="a.png",
            mimeType="image/png",
            file={"path": "files/crd_2/a.png"},
        )
        path = make_archive(tmp_path / "a.zip", [_card(1), image], {"files/crd_2/a.png": body})
        data = bytearray(path.read_bytes())
        at = data.find(body[8:24])  # inside the stored member: its CRC-32 no longer matches
        data[at] ^= 0xFF
        path.write_bytes(bytes(data))
        outcome = self.restore(database, settings, account_id, path)
        assert [card_id for card_id, _ in outcome.failed] == ["crd_2"]
        assert "cannot be read from the archive" in outcome.failed[0][1]
        assert [c.content for c in self.cards_of(database, account_id)] == ["note 1"]

    def test_the_quota_counters_hold_what_was_restored_and_nothing_of_what_failed(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        kept, discarded, unread = png(4, 4), png(8, 8), png(12, 12)

        def image(number: int, **fields: Any) -> dict[str, Any]:
            path = f"files/crd_{number}/a.png"
            return _card(
                number,
                type="image",
                content="",
                fileName="a.png",
                mimeType="image/png",
                file={"path": path},
                **fields,
            )

        path = make_archive(
            tmp_path / "a.zip",
            [
                _card(1),
                image(2),  # restored with its file
                image(3, captions={"path": "captions/crd_3/a.vtt"}),  # made, taken, then removed again
                image(4),  # its upload is issued, its bytes are not the manifest's
            ],
            {"files/crd_2/a.png": kept, "files/crd_3/a.png": discarded, "files/crd_4/a.png": unread},
            files_crd_4_a_png=unread[:-1] + b"!",
        )
        outcome = self.restore(database, settings, account_id, path)
        assert sorted(card_id for card_id, _ in outcome.failed) == ["crd_3", "crd_4"]
        # The upload of the card that could not be read waits, as any untaken one, 24 hours.
        assert assert_counters_hold(database, account_id) == [(len(unread), len(kept))]

    def test_what_the_api_could_not_show_is_dropped_and_the_card_kept(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        odd = _card(
            2,
            type="link",
            url="https://example.com/a",
            colors=["<script>"],
            aiTranscriptSource="bogus",
            aiTranscript="words",
            audioWaveform={"detail": "x"},
            linkMetadata={"price": 5},
            filePreview={"kind": "nothing"},
            aiEngine={"kind": 1},
            metadataTitle="Kept",
        )
        path = make_archive(tmp_path / "a.zip", [odd])
        outcome = self.restore(database, settings, account_id, path)
        assert outcome.failed == [] and outcome.cards == 1
        (card,) = self.cards_of(database, account_id)
        assert (card.colors, card.transcript_source, card.waveform, card.link_meta) == (
            None,
            None,
            None,
            None,
        )
        assert (card.file_preview, card.ai_engine, card.metadata_title) == (None, None, "Kept")
        with database.transaction(write=False) as session:
            stages = {
                s.stage: s.state
                for s in session.scalars(select(CardStage).where(CardStage.card_pk == card.pk))
            }
        assert stages["linkMetadata"] == "pending"  # its page is read again

    def test_a_folder_with_a_colour_off_the_palette_keeps_its_name(
        self, database: Database, settings: Settings, account_id: str, tmp_path: Path
    ) -> None:
        path = make_archive(
            tmp_path / "a.zip", [_card(1)], folder={"id": "fld_1", "name": "Odd", "color": {"x": 1}}
        )
        self.restore(database, settings, account_id, path)
        with database.transaction(write=False) as session:
            (folder,) = session.scalars(select(Folder).where(Folder.account_id == account_id)).all()
            assert (folder.name, folder.color) == ("Odd", None)
