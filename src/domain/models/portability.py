"""Models of exports: the export job and the cards it snapshotted."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class ExportJob(Base):
    """A ZIP export of an account (cardvault.domain.portability.exports); the row is the truth about it."""

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
