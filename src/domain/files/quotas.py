"""An account's storage quotas: what its uploads no card has taken yet declare together, and that
plus every byte its cards keep in storage. Checked when an upload is asked for
(cardvault.domain.files.uploads) and when a restore stores a capture (cardvault.workers.restored_captures).

Each account keeps both amounts on its row (``pending_upload_bytes``, ``stored_file_bytes``),
so the check is one conditional UPDATE of one row however many cards and uploads the account
has. Every change to what they count moves them in its own transaction:

- an upload issued (``ensure_room``): pending up by its declared size, when it fits;
- an upload taken by a new card, as a link card's image or as a caption file (the callers of
  ``uploads.mark_taken``): pending down by its declared size;
- a card made (``cards.editing.add_card``): stored up by its file size;
- a card's objects beyond its file set, replaced or dropped (caption file, image and
  renditions, capture: cardvault.domain.files.held): stored moved by the difference;
- a card deleted for good (``cards.trash``): stored down by its file size and held bytes;
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
    take(session, account_id=account_id, pending=file_size, quotas=quotas)


def take(session: Session, *, account_id: str, pending: int = 0, stored: int = 0, quotas: Quotas) -> None:
    """Count these new bytes (pending uploads, stored files) on the account if they fit its
    quotas; QuotaExceeded, with nothing counted, when they would not."""
    room = []
    if quotas.pending_bytes is not None and pending:
        room.append(Account.pending_upload_bytes + pending <= quotas.pending_bytes)
    if quotas.stored_bytes is not None:
        room.append(
            Account.pending_upload_bytes + Account.stored_file_bytes + pending + stored <= quotas.stored_bytes
        )
    if not room:
        count(session, account_id=account_id, pending=pending, stored=stored)
        return
    # One statement both checks and counts: PostgreSQL checks the condition again on the row a
    # concurrent writer left (its lock held until that one ends), so two cannot pass the same
    # room together; SQLite has one writer at a time. FOR NO KEY UPDATE, as any UPDATE of
    # these columns: rows that refer to the account (a new card) need not wait for it.
    counted = session.execute(
        update(Account)
        .where(Account.id == account_id, *room)
        .values(
            pending_upload_bytes=Account.pending_upload_bytes + pending,
            stored_file_bytes=Account.stored_file_bytes + stored,
        )
        .execution_options(synchronize_session=False)
    )
    if counted.rowcount != 1:  # type: ignore[attr-defined]  # (a CursorResult's)
        used = session.execute(
            select(Account.pending_upload_bytes, Account.stored_file_bytes).where(Account.id == account_id)
        ).one()
        # Bytes stored at once (a restored capture) never count in the pending uploads' quota.
        asked = quotas if pending else Quotas(stored_bytes=quotas.stored_bytes)
        raise refusal(pending=used[0], stored=used[1], file_size=pending + stored, quotas=asked)


def ensure_fits(session: Session, *, account_id: str, stored: int, quotas: Quotas) -> None:
    """QuotaExceeded when ``stored`` more bytes would take the account past its stored-files
    quota (a check before the bytes are written; ``take`` counts them)."""
    if quotas.stored_bytes is not None:
        used = session.execute(
            select(Account.pending_upload_bytes, Account.stored_file_bytes).where(Account.id == account_id)
        ).one()
        check_room(
            pending=used[0], stored=used[1], file_size=stored, quotas=Quotas(stored_bytes=quotas.stored_bytes)
        )


def check_room(*, pending: int, stored: int, file_size: int, quotas: Quotas) -> None:
    """QuotaExceeded when an upload of ``file_size`` would take an account with these pending
    and stored bytes past a quota."""
    over_pending = quotas.pending_bytes is not None and pending + file_size > quotas.pending_bytes
    if over_pending or (
        quotas.stored_bytes is not None and stored + pending + file_size > quotas.stored_bytes
    ):
        raise refusal(pending=pending, stored=stored, file_size=file_size, quotas=quotas)


def refusal(*, pending: int, stored: int, file_size: int, quotas: Quotas) -> QuotaExceeded:
    """Why ``file_size`` more bytes do not fit an account with these pending and stored bytes:
    its pending uploads' quota when they pass it, else its stored files' (also when a writer
    freed room after the refused statement: asked again, they may fit)."""
    if quotas.pending_bytes is not None and pending + file_size > quotas.pending_bytes:
        return QuotaExceeded("pendingUploads", limit=quotas.pending_bytes, used=pending, requested=file_size)
    limit = quotas.stored_bytes if quotas.stored_bytes is not None else 0
    return QuotaExceeded("storedFiles", limit=limit, used=stored + pending, requested=file_size)


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


def count_deleted_files(session: Session, deleted: Iterable[tuple[str, int | None, int]]) -> None:
    """Take deleted cards' files, each (account id, file size, held bytes), off their accounts'
    stored bytes."""
    freed: Counter[str] = Counter()
    for account_id, file_size, held_bytes in deleted:
        freed[account_id] += (file_size or 0) + held_bytes
    for account_id in sorted(freed):  # in id order: two such transactions never wait for each other
        count(session, account_id=account_id, stored=-freed[account_id])
