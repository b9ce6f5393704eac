"""An account's storage quotas: what its uploads no card has taken yet declare together, and that
plus the files its cards hold. Checked when an upload is asked for (cardvault.domain.files.uploads).

Each account keeps both amounts on its row (``pending_upload_bytes``, ``stored_file_bytes``),
so the check reads one row however many cards and uploads the account has. Every change to what
they count moves them in its own transaction:

- an upload issued (``ensure_room``): pending up by its declared size;
- an upload taken by a new card, as a link card's image or as a caption file (the callers of
  ``uploads.mark_taken``): pending down by its declared size;
- a card made (``cards.editing.add_card``): stored up by its file size;
- a card deleted for good (``cards.trash``): stored down by its file size;
- uploads deleted 24 hours after they were issued (``uploads.forget_old``): pending down by the
  declared sizes of those no card took.

The account's row is the last lock a writer takes (the lock order in cardvault.domain.db): the
counters move at the end of the change, after its tag counters, several accounts' in id order.
Only a new upload takes it first, and nothing after it but its own new row."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cardvault.domain.errors import QuotaExceeded
from cardvault.domain.models import Account, Upload


@dataclasses.dataclass(frozen=True)
class Quotas:
    """An account's storage quotas, in bytes (None: no quota): what its uploads no card has
    taken yet declare together (each counts until a card takes it or it is deleted, 24 hours
    after it was issued), and that plus the files its cards hold, in Trash too."""

    pending_bytes: int | None = None
    stored_bytes: int | None = None


NO_QUOTAS = Quotas()


def ensure_room(session: Session, *, account_id: str, file_size: int, quotas: Quotas) -> None:
    """Count a new upload of ``file_size`` in the account's pending uploads; QuotaExceeded, with
    nothing counted, when it would take the account past a quota."""
    if quotas.pending_bytes is not None or quotas.stored_bytes is not None:
        # One new upload of the account at a time (PostgreSQL; SQLite's write lock is one
        # already), so two cannot pass the same room together. FOR NO KEY UPDATE: rows that
        # refer to the account (a new card) need not wait for it.
        pending, stored = session.execute(
            select(Account.pending_upload_bytes, Account.stored_file_bytes)
            .where(Account.id == account_id)
            .with_for_update(key_share=True)
        ).one()
        check_room(pending=pending, stored=stored, file_size=file_size, quotas=quotas)
    count(session, account_id=account_id, pending=file_size)


def check_room(*, pending: int, stored: int, file_size: int, quotas: Quotas) -> None:
    """QuotaExceeded when an upload of ``file_size`` would take an account with these pending
    and stored bytes past a quota."""
    if quotas.pending_bytes is not None and pending + file_size > quotas.pending_bytes:
        raise QuotaExceeded("pendingUploads", limit=quotas.pending_bytes, used=pending, requested=file_size)
    used = stored + pending
    if quotas.stored_bytes is not None and used + file_size > quotas.stored_bytes:
        raise QuotaExceeded("storedFiles", limit=quotas.stored_bytes, used=used, requested=file_size)


def count(session: Session, *, account_id: str, pending: int = 0, stored: int = 0) -> None:
    """Move the account's counters by these bytes (negative: freed), in the transaction of the
    change they count."""
    if pending or stored:
        session.execute(
            update(Account)
            .where(Account.id == account_id)
            .values(
                pending_upload_bytes=Account.pending_upload_bytes + pending,
                stored_file_bytes=Account.stored_file_bytes + stored,
            )
            .execution_options(synchronize_session=False)
        )


def count_deleted_uploads(session: Session, deleted: Iterable[Upload]) -> None:
    """Take deleted uploads that no card took off their accounts' pending bytes."""
    freed: Counter[str] = Counter()
    for upload in deleted:
        if upload.attached_at is None:
            freed[upload.account_id] += upload.declared_size
    for account_id in sorted(freed):  # in id order: two such transactions never wait for each other
        count(session, account_id=account_id, pending=-freed[account_id])


def count_deleted_files(session: Session, deleted: Iterable[tuple[str, int | None]]) -> None:
    """Take deleted cards' files, each (account id, file size), off their accounts' stored bytes."""
    freed: Counter[str] = Counter()
    for account_id, file_size in deleted:
        freed[account_id] += file_size or 0
    for account_id in sorted(freed):  # in id order: two such transactions never wait for each other
        count(session, account_id=account_id, stored=-freed[account_id])
