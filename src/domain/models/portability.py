"""Models of exports (the export job and the cards it snapshotted) and of imports."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class ExportJob(Base):
    """A ZIP export of an account (cardvault.domain.portability.exports.jobs); the row is the
    truth about it."""

    __tablename__ = "export_jobs"
    __table_args__ = (
        Index("ix_export_jobs_account_created", "account_id", "created_at"),
        Index("ix_export_jobs_status_heartbeat", "status", "heartbeat_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    # The account id while the job is pending or running, NULL after: one active job per account.
    active_account_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    status: Mapped[str] = mapped_column(String(16))
    stage: Mapped[str | None] = mapped_column(String(16))
    failure_class: Mapped[str | None] = mapped_column(String(32))
    processed_count: Mapped[int] = mapped_column(Integer)
    card_count: Mapped[int | None] = mapped_column(Integer)
    files_included: Mapped[int | None] = mapped_column(Integer)
    files_omitted: Mapped[int | None] = mapped_column(Integer)
    files_unreadable: Mapped[int | None] = mapped_column(Integer)  # of the omitted: not read
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    last_card_pk: Mapped[int] = mapped_column(BigInteger)  # the newest card the export takes
    cursor_pk: Mapped[int] = mapped_column(BigInteger)  # snapshotting's progress
    attempts: Mapped[int] = mapped_column(Integer)
    lease: Mapped[str | None] = mapped_column(String(32))  # the working attempt's
    object_key: Mapped[str | None] = mapped_column(Text)  # the archive, once ready
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    heartbeat_at: Mapped[int] = mapped_column(BigInteger)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
    expires_at: Mapped[int | None] = mapped_column(BigInteger)


class ExportItem(Base):
    """One card of an export as snapshotting read it, and what archiving did with its files."""

    __tablename__ = "export_items"

    job_id: Mapped[str] = mapped_column(ForeignKey("export_jobs.id", ondelete="CASCADE"), primary_key=True)
    card_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    record: Mapped[dict[str, Any]] = mapped_column(JSON)  # the card as cards.json shows it
    file_object: Mapped[str | None] = mapped_column(Text)
    captions_object: Mapped[str | None] = mapped_column(Text)
    # A link's capture: {role: key} for its screenshot, archive and reader view (SQL NULL: none).
    capture_objects: Mapped[dict[str, str] | None] = mapped_column(JSON(none_as_null=True))
    # Set by archiving: {"file": {"path", "size", "sha256"} | {"omitted": reason}, "captions": ...}
    archived: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class ImportJob(Base):
    """An import of another service's export, or of our own archive, into an account
    (cardvault.domain.portability.imports.jobs); the row is the truth about it. Entries are taken
    in the file's order, a batch per transaction that also moves ``position``: a worker that
    dies loses its batch, and the next one starts after the last batch committed."""

    __tablename__ = "import_jobs"
    __table_args__ = (
        Index("ix_import_jobs_account_created", "account_id", "created_at"),
        Index("ix_import_jobs_status_heartbeat", "status", "heartbeat_at"),
        Index("ix_import_jobs_completed_at", "completed_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    # The account id while the job is pending or running, NULL after: one active job per account.
    active_account_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    status: Mapped[str] = mapped_column(String(16))  # pending, running, completed, failed, canceled
    format: Mapped[str] = mapped_column(String(32))
    on_duplicate: Mapped[str] = mapped_column(String(8))  # skip, merge or create
    file_name: Mapped[str] = mapped_column(String(255))
    file_size: Mapped[int] = mapped_column(BigInteger)
    object_key: Mapped[str | None] = mapped_column(Text)  # the file, until the job ends
    position: Mapped[int] = mapped_column(Integer)  # entries taken so far, in the file's order
    found: Mapped[int] = mapped_column(Integer)
    created: Mapped[int] = mapped_column(Integer)
    merged: Mapped[int] = mapped_column(Integer)
    skipped: Mapped[int] = mapped_column(Integer)
    failed: Mapped[int] = mapped_column(Integer)
    failures: Mapped[list[dict[str, Any]]] = mapped_column(JSON)  # the first 100: {entry, reason}
    unmapped: Mapped[dict[str, int]] = mapped_column(JSON)  # fields kept nowhere: how many entries had them
    error: Mapped[str | None] = mapped_column(Text)  # why a failed job failed
    attempts: Mapped[int] = mapped_column(Integer)
    lease: Mapped[str | None] = mapped_column(String(32))  # the working run's (handed on at a slice's end)
    # Restoring our own archive: the card its entry at ``position`` made, until it is whole
    # (a run that finds one, its worker killed mid-card, removes it and restores the entry anew).
    restoring_card_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    heartbeat_at: Mapped[int] = mapped_column(BigInteger)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
