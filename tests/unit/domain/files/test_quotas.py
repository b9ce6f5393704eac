"""Storage quotas per account, through the upload operations: the uploads no card has taken yet,
and those plus the files its cards hold. A refused upload answers 409 QUOTA_EXCEEDED and records
nothing. The amounts are counters on the account's row: after every kind of change they are the
sums of the rows they count, and the check reads no card and no upload."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select, update
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.domain.cards import trash
from cardvault.domain.db import Database
from cardvault.domain.errors import QuotaExceeded
from cardvault.domain.files import held, uploads
from cardvault.domain.files.quotas import Quotas, check_room, ensure_room, take
from cardvault.domain.models import Account, Card, Upload
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from cardvault.workers import embedded
from harness import media_files
from tests.conftest import Api, api_of_new_account, app_env
from tests.unit.domain.cards.test_captions import caption_ticket
from tests.unit.handlers.test_uploads import png, put, thumbnail_upload, uploaded
from tests.unit.workers.stages.test_media import file_card


def assert_counters_hold(
    database: Database, *account_ids: str, store: BlobStore | None = None
) -> list[tuple[int, int]]:
    """Assert that each account's counters are the sums of the rows they count, recomputed:
    its uploads no card took, and its cards' files and held objects (with ``store``, each held
    object's bytes as the store has them); return each one's (pending, stored)."""
    found = []
    with database.transaction(write=False) as session:
        for account_id in account_ids:
            if store is not None:
                assert_held_as_stored(session, store, account_id)
            counters = session.execute(
                select(Account.pending_upload_bytes, Account.stored_file_bytes).where(
                    Account.id == account_id
                )
            ).one()
            pending = session.scalar(
                select(func.coalesce(func.sum(Upload.declared_size), 0)).where(
                    Upload.account_id == account_id, Upload.attached_at.is_(None)
                )
            )
            stored = session.scalar(
                select(func.coalesce(func.sum(func.coalesce(Card.file_size, 0) + Card.held_bytes), 0)).where(
                    Card.account_id == account_id
                )
            )
            assert tuple(counters) == (pending, stored), account_id
            found.append((int(pending or 0), int(stored or 0)))
    return found


def assert_held_as_stored(session: Session, store: BlobStore, account_id: str) -> None:
    """Assert that each card of the account counts the bytes the store holds for its objects
    beyond its file, each one by its column."""
    for card in session.scalars(select(Card).where(Card.account_id == account_id)):
        stored = {}
        for column in held.HELD_COLUMNS:
            if (key := getattr(card, column)) is not None:
                found = store.stat(key)
                assert found is not None, (card.id, column)
                stored[column] = found.size
        assert (card.held_sizes or {}) == stored and card.held_bytes == sum(stored.values()), card.id


def held_in_store(
    database: Database, store: BlobStore, account_id: str, card_ids: Iterable[str] | None = None
) -> int:
    """What the store holds for the account's cards' objects beyond their files (of these
    cards only, when given), in bytes."""
    chosen = Card.account_id == account_id
    if card_ids is not None:
        chosen &= Card.id.in_(list(card_ids))
    with database.transaction(write=False) as session:
        cards = session.scalars(select(Card).where(chosen))
        keys = [getattr(card, column) for card in cards for column in held.HELD_COLUMNS]
    return sum(found.size for key in keys if key and (found := store.stat(key)) is not None)


class TestQuotas:
    """Storage quotas per account: the uploads no card has taken yet, and those plus the files
    its cards hold. A refused upload answers 409 QUOTA_EXCEEDED and records nothing."""

    DATA = png()
    SIZE = len(DATA)

    @pytest.fixture
    def quota_app(self, tmp_path: Path, database: Database) -> Iterator[TestClient]:
        env = {
            **app_env(tmp_path, database),
            "CARDVAULT_QUOTA_PENDING_BYTES": str(2 * self.SIZE),
            "CARDVAULT_QUOTA_STORED_BYTES": str(2 * self.SIZE),
        }
        app = create_app(Settings.from_env(env), database)
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client

    def _ask(self, api: Api) -> Any:
        return api.post(
            "/v1/uploads", json={"fileName": "a.png", "fileSize": self.SIZE, "mimeType": "image/png"}
        )

    def test_pending_uploads_count_until_a_card_takes_one(
        self, quota_app: TestClient, database: Database
    ) -> None:
        api = api_of_new_account(quota_app, database, "quota")
        first, second = self._ask(api), self._ask(api)
        assert first.status_code == second.status_code == 200
        refused = self._ask(api)
        assert refused.status_code == 409, refused.text
        body = refused.json()
        assert body["code"] == "QUOTA_EXCEEDED" and body["retryAt"] is None
        assert body["details"] == {
            "quota": "pendingUploads",
            "limitBytes": 2 * self.SIZE,
            "usedBytes": 2 * self.SIZE,
            "requestedBytes": self.SIZE,
        }
        with database.transaction(write=False) as session:
            count = session.scalar(
                select(func.count()).select_from(Upload).where(Upload.account_id == api.account_id)
            )
        assert count == 2  # the refused one recorded nothing
        # Another account has quotas of its own.
        assert self._ask(api_of_new_account(quota_app, database, "other")).status_code == 200

    def test_a_taken_upload_leaves_the_pending_quota_and_counts_as_stored(
        self, quota_app: TestClient, database: Database
    ) -> None:
        api = api_of_new_account(quota_app, database, "quota")
        upload = self._ask(api).json()
        stored = put(api, upload, self.DATA)
        created = api.post(
            "/v1/cards", json={"fileKey": upload["fileKey"], "fileEtag": stored.headers["ETag"]}
        )
        assert created.status_code == 200, created.text
        embedded.wait_until_idle()  # its renditions made: what the card keeps counts as stored too
        with database.transaction(write=False) as session:
            renditions = session.scalar(select(Card.held_bytes).where(Card.id == created.json()["cardId"]))
        assert renditions is not None and renditions > 0
        refused = self._ask(api)  # pending: none; stored: the card's file and its renditions
        assert refused.status_code == 409
        assert refused.json()["details"] == {
            "quota": "storedFiles",
            "limitBytes": 2 * self.SIZE,
            "usedBytes": self.SIZE + renditions,
            "requestedBytes": self.SIZE,
        }

    def test_a_card_images_upload_counts_too(self, quota_app: TestClient, database: Database) -> None:
        api = api_of_new_account(quota_app, database, "quota")
        card = api.create(content="https://example.com/page")["id"]
        body = {"fileName": "a.png", "fileSize": self.SIZE, "mimeType": "image/png"}
        answers = [api.post(f"/v1/cards/{card}/thumbnail/upload", json=body).status_code for _ in range(3)]
        assert answers == [200, 200, 409]


class TestCounters:
    """The counters the quotas read move with every change to what they count, in its
    transaction: uploads issued, taken by cards, as images and caption files, forgotten after
    24 hours; cards made, deleted for good, purged from Trash and emptied from it."""

    @pytest.mark.fresh_app  # it reads the app's store through settings (its tmp_path)
    def test_every_kind_of_change_keeps_the_counters_the_sums_of_their_rows(
        self, api: Api, make_api: Callable[[], Api], database: Database, settings: Settings, tmp_path: Path
    ) -> None:
        other, store = make_api(), store_from_settings(settings)
        small, large = png(4, 4), png(40, 30)
        # Uploads issued.
        taken_key, taken_etag = uploaded(api, small, "a.png", "image/png")
        forgotten_key, _ = uploaded(api, large, "b.png", "image/png")
        uploaded(api, large, "c.png", "image/png")  # still waiting for a card at the end
        others_key, others_etag = uploaded(other, small, "d.png", "image/png")
        assert assert_counters_hold(database, api.account_id, other.account_id) == [
            (len(small) + 2 * len(large), 0),
            (len(small), 0),
        ]
        # Taken by cards; a card that declares a size without a file counts it, as the sum did.
        # What the cards keep beyond their files (the pipeline's renditions) counts too.
        image = api.post("/v1/cards", json={"fileKey": taken_key, "fileEtag": taken_etag}).json()["cardId"]
        others_image = other.post("/v1/cards", json={"fileKey": others_key, "fileEtag": others_etag})
        declared = api.create(content="sizes", fileSize=1234)["id"]
        embedded.wait_until_idle()
        assert held_in_store(database, store, api.account_id) > 0
        assert assert_counters_hold(database, api.account_id, other.account_id, store=store) == [
            (2 * len(large), len(small) + 1234 + held_in_store(database, store, api.account_id)),
            (0, len(small) + held_in_store(database, store, other.account_id)),
        ]
        # Taken as a link card's image (its renditions) and as an audio card's caption file.
        link = api.create(content="https://example.com/page")["id"]
        cover = thumbnail_upload(api, link, png(300, 200))
        assert api.put(f"/v1/cards/{link}/thumbnail", json={"fileKey": cover}).status_code == 200
        tone = media_files.audio(tmp_path / "tone.mp3").read_bytes()
        audio = file_card(api, tone, "tone.mp3", "audio/mpeg")
        vtt = b"WEBVTT\n\n00:00.500 --> 00:01.500\nA tone.\n"
        issued = caption_ticket(api, audio, vtt).json()
        assert put(api, issued, vtt).status_code == 200
        assert api.put(f"/v1/cards/{audio}/captions", json={"fileKey": issued["fileKey"]}).status_code == 200
        embedded.wait_until_idle()
        cover_bytes = held_in_store(database, store, api.account_id, [link])
        assert cover_bytes > 0 and held_in_store(database, store, api.account_id, [audio]) == len(vtt)
        files = len(small) + 1234 + len(tone)
        assert assert_counters_hold(database, api.account_id, store=store) == [
            (2 * len(large), files + held_in_store(database, store, api.account_id))
        ]
        # Dropped: the replaced image's renditions and the caption file leave again.
        assert api.request("DELETE", f"/v1/cards/{audio}/captions").status_code in (200, 204)
        assert api.request("DELETE", f"/v1/cards/{link}/thumbnail").status_code in (200, 204)
        embedded.wait_until_idle()
        assert held_in_store(database, store, api.account_id, [audio]) == 0
        assert assert_counters_hold(database, api.account_id, store=store) == [
            (2 * len(large), files + held_in_store(database, store, api.account_id))
        ]
        # Forgotten 24 hours after they were issued: the untaken ones leave the pending bytes.
        with database.transaction() as session:
            session.execute(
                update(Upload)
                .where(Upload.id.in_([taken_key, forgotten_key, others_key]))
                .values(created_at=Upload.created_at - uploads.KEEP_MS - 1)
            )
        with database.transaction() as session:
            while uploads.forget_old(session, batch_size=2) == 2:
                pass
        assert assert_counters_hold(database, api.account_id, other.account_id, store=store) == [
            (len(large), files + held_in_store(database, store, api.account_id)),
            (0, len(small) + held_in_store(database, store, other.account_id)),
        ]
        # Deleted for good: one card, then two accounts' cards purged from Trash together.
        assert api.post(f"/v1/cards/{declared}/trash").status_code == 200
        assert api.request("DELETE", f"/v1/cards/{declared}").status_code == 204
        assert_counters_hold(database, api.account_id)
        for who, card_id in ((api, image), (other, others_image.json()["cardId"])):
            assert who.post(f"/v1/cards/{card_id}/trash").status_code == 200
        with database.transaction() as session:
            session.execute(
                update(Card).where(Card.id.in_([image, others_image.json()["cardId"]])).values(deleted_at=1)
            )
            assert trash.purge_expired(session, retention_ms=trash.retention_ms(30)) >= 2
        assert assert_counters_hold(database, api.account_id, other.account_id, store=store) == [
            (len(large), len(tone) + held_in_store(database, store, api.account_id)),
            (0, 0),
        ]
        # Emptied from Trash.
        for card_id in (audio, link):
            assert api.post(f"/v1/cards/{card_id}/trash").status_code == 200
        assert api.request("DELETE", "/v1/trash").status_code == 200
        assert assert_counters_hold(database, api.account_id) == [(len(large), 0)]

    def test_the_check_reads_the_accounts_row_and_no_card_or_upload(
        self, database: Database, account_id: str
    ) -> None:
        statements: list[str] = []

        def capture(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            statements.append(statement)

        quotas = Quotas(pending_bytes=100, stored_bytes=1000)
        event.listen(database.engine, "before_cursor_execute", capture)
        try:
            with database.transaction() as session:
                ensure_room(session, account_id=account_id, file_size=60, quotas=quotas)
            with pytest.raises(QuotaExceeded), database.transaction() as session:
                ensure_room(session, account_id=account_id, file_size=60, quotas=quotas)
        finally:
            event.remove(database.engine, "before_cursor_execute", capture)
        read = [s for s in statements if not re.match(r"\s*(BEGIN|COMMIT|ROLLBACK)", s, re.IGNORECASE)]
        # Passed: one conditional UPDATE of the row. Refused: that UPDATE (no row), then the row
        # read for the error's figures.
        assert [s.split()[0].upper() for s in read] == ["UPDATE", "UPDATE", "SELECT"], read
        assert all(re.search(r"\baccounts\b", s) for s in read), read
        assert not [s for s in read if re.search(r"\b(cards|uploads)\b|\b(sum|count)\s*\(", s, re.I)], read
        with database.transaction() as session:  # the refused one counted nothing
            assert session.scalar(select(Account.pending_upload_bytes).where(Account.id == account_id)) == 60
            session.execute(  # this account has no upload row: put its counter back
                update(Account).where(Account.id == account_id).values(pending_upload_bytes=0)
            )

    def test_uploads_asked_for_together_never_pass_the_quota_together(
        self, database: Database, settings: Settings, account_id: str
    ) -> None:
        store, quotas = store_from_settings(settings), Quotas(pending_bytes=5 * 100)
        answers: list[str] = []

        def ask() -> None:
            try:
                with database.transaction() as session:
                    uploads.issue(
                        session,
                        store,
                        account_id=account_id,
                        file_name="a.png",
                        file_size=100,
                        mime_type="image/png",
                        quotas=quotas,
                    )
                answers.append("issued")
            except QuotaExceeded:
                answers.append("refused")

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(answers) == ["issued"] * 5 + ["refused"] * 3
        assert assert_counters_hold(database, account_id) == [(500, 0)]

    def test_bytes_stored_together_never_pass_the_stored_quota_together(
        self, database: Database, account_id: str
    ) -> None:
        quotas, answers = Quotas(stored_bytes=5 * 100), list[str]()
        ready = threading.Barrier(8)

        def store_capture() -> None:
            ready.wait()
            try:
                with database.transaction() as session:
                    take(session, account_id=account_id, stored=100, quotas=quotas)
                answers.append("counted")
            except QuotaExceeded:
                answers.append("refused")

        threads = [threading.Thread(target=store_capture) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(answers) == ["counted"] * 5 + ["refused"] * 3
        with database.transaction() as session:
            assert session.scalar(select(Account.stored_file_bytes).where(Account.id == account_id)) == 500
            session.execute(  # this account has no card: put its counter back
                update(Account).where(Account.id == account_id).values(stored_file_bytes=0)
            )

    @pytest.mark.parametrize(
        ("pending", "stored", "size", "refused"),
        [
            (60, 0, 40, None),  # exactly at the pending quota
            (60, 0, 41, "pendingUploads"),
            (10, 850, 40, None),  # exactly at the stored quota, pending included
            (10, 850, 41, "storedFiles"),
        ],
    )
    def test_an_upload_that_fills_a_quota_to_its_last_byte_passes(
        self, pending: int, stored: int, size: int, refused: str | None
    ) -> None:
        quotas = Quotas(pending_bytes=100, stored_bytes=900)
        if refused is None:
            check_room(pending=pending, stored=stored, file_size=size, quotas=quotas)
            return
        with pytest.raises(QuotaExceeded) as raised:
            check_room(pending=pending, stored=stored, file_size=size, quotas=quotas)
        assert raised.value.details["quota"] == refused
