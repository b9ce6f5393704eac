"""Adding a card that may take an uploaded file, across its two transactions and the store's copy.

A file card's upload is checked (in a read-only transaction) and copied where the card keeps it
before the card's write transaction, which then only marks it taken: the store's calls (an S3
copy of a large file) hold no lock. A copy whose card never commits is deleted with its upload
after ``uploads.KEEP_MS``; a retry makes the same one.

The one domain function that opens its own transactions (docs/architecture.md, "House rules":
domain functions take a session and never commit): its two transactions and the copy between
them are one rule, so it takes the database, as a service function would, and hands its caller
the write transaction's session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Unpack

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.files import uploads
from cardvault.domain.pipeline.processing import Written


@contextmanager
def adding_card(
    db: Database,
    store: BlobStore,
    *,
    account_id: str,
    file_key: str | None = None,
    file_etag: str | None = None,
    max_cards: int | None = None,
    **given: Unpack[editing.NewCard],
) -> Iterator[tuple[Session, Written]]:
    """Add a card (taking the upload ``file_key`` names, if any) and queue its stages; yield it
    with the session of its write transaction, which commits when the block ends (the caller
    sends its stages and enqueues its jobs after that commit, and reads what it answers in the
    same transaction)."""
    file = None
    if file_key is not None:
        with db.transaction(write=False) as session:
            checked = editing.check_file(
                session,
                store,
                account_id=account_id,
                file_key=file_key,
                file_etag=file_etag,
                card_type=given.get("card_type"),
                content=given.get("content"),
            )
        given = {**given, "card_type": checked.card_type, "content": checked.content}
        file = uploads.copy_for_card(store, checked.checked)
    with db.transaction() as session:
        written = editing.add_card(
            session, account_id=account_id, file=file, max_cards=max_cards, queued=True, **given
        )
        yield session, written
