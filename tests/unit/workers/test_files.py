"""The file clean-up jobs the sweeper sends (cardvault.workers.files): uploads a day old, and
the objects doomed with them."""

from __future__ import annotations

from sqlalchemy import update

from cardvault.adapters.blobs import BlobStore
from cardvault.domain.db import Database
from cardvault.domain.files import uploads
from cardvault.domain.models import Upload
from cardvault.workers.files import delete_doomed_objects, forget_old_uploads
from tests.conftest import Api
from tests.unit.handlers.test_uploads import png, uploaded


def test_uploads_a_day_old_go_with_their_objects(
    files_api: Api, files_store: BlobStore, database: Database
) -> None:
    taken_key, etag = uploaded(files_api, png(), "a.png", "image/png")
    files_api.post("/v1/cards", json={"fileKey": taken_key, "fileEtag": etag})
    uploaded(files_api, png(), "b.png", "image/png")  # never taken
    with database.transaction() as session:
        session.execute(
            update(Upload)
            .where(Upload.account_id == files_api.account_id)
            .values(created_at=Upload.created_at - uploads.KEEP_MS - 1)
        )
    forget_old_uploads.fn()  # what the sweeper sends every ten minutes
    delete_doomed_objects.fn()
    kept = list(files_store.keys(f"accounts/{files_api.account_id}/"))
    # The card keeps its own copy (and its renditions); both upload objects are gone.
    assert not [k for k in kept if "/uploads/" in k]
    assert len([k for k in kept if "/files/" in k]) == 1
