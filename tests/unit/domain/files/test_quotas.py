"""Storage quotas per account, through the upload operations: the uploads no card has taken yet,
and those plus the files its cards hold. A refused upload answers 409 QUOTA_EXCEEDED and records
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.domain.models import Upload
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import Api, api_of_new_account, app_env
from tests.unit.handlers.test_uploads import png, put


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
        assert self._ask(api).status_code == 200  # pending: one; stored: the card's file
        refused = self._ask(api)  # pending would be two (within), with the card's file three
        assert refused.status_code == 409
        assert refused.json()["details"] == {
            "quota": "storedFiles",
            "limitBytes": 2 * self.SIZE,
            "usedBytes": 2 * self.SIZE,
            "requestedBytes": self.SIZE,
        }

    def test_a_card_images_upload_counts_too(self, quota_app: TestClient, database: Database) -> None:
        api = api_of_new_account(quota_app, database, "quota")
        card = api.create(content="https://example.com/page")["id"]
        body = {"fileName": "a.png", "fileSize": self.SIZE, "mimeType": "image/png"}
        answers = [api.post(f"/v1/cards/{card}/thumbnail/upload", json=body).status_code for _ in range(3)]
        assert answers == [200, 200, 409]
