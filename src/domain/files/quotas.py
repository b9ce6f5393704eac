"""An account's storage quotas: what its uploads no card has taken yet declare together, and that
plus the files its cards hold. Checked when an upload is asked for (cardvault.domain.files.uploads)."""

from __future__ import annotations

import dataclasses

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cardvault.domain.errors import QuotaExceeded
from cardvault.domain.models import Account, Card, Upload


@dataclasses.dataclass(frozen=True)
class Quotas:
    """An account's storage quotas, in bytes (None: no quota): what its uploads no card has
    taken yet declare together (each counts until a card takes it or it is deleted, 24 hours
    after it was issued), and that plus the files its cards hold, in Trash too."""

    pending_bytes: int | None = None
    stored_bytes: int | None = None


NO_QUOTAS = Quotas()


def ensure_room(session: Session, *, account_id: str, file_size: int, quotas: Quotas) -> None:
    """QuotaExceeded when an upload of ``file_size`` would take the account past a quota."""
    if quotas.pending_bytes is None and quotas.stored_bytes is None:
        return
    # One new upload of the account at a time (PostgreSQL; SQLite's write lock is one already),
    # so two cannot pass the same room together.
    session.execute(select(Account.id).where(Account.id == account_id).with_for_update())
    pending = session.scalar(
        select(func.coalesce(func.sum(Upload.declared_size), 0)).where(
            Upload.account_id == account_id, Upload.attached_at.is_(None)
        )
    )
    pending = int(pending or 0)
    if quotas.pending_bytes is not None and pending + file_size > quotas.pending_bytes:
        raise QuotaExceeded("pendingUploads", limit=quotas.pending_bytes, used=pending, requested=file_size)
    if quotas.stored_bytes is not None:
        stored = session.scalar(
            select(func.coalesce(func.sum(Card.file_size), 0)).where(Card.account_id == account_id)
        )
        used = int(stored or 0) + pending
        if used + file_size > quotas.stored_bytes:
            raise QuotaExceeded("storedFiles", limit=quotas.stored_bytes, used=used, requested=file_size)
