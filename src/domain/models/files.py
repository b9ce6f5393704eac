"""Models of files: uploads waiting for a card, and blob-store objects waiting to be deleted."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Upload(Base):
    """A file a client was given a URL to upload, until a card takes it (or 24 hours pass)."""

    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the fileKey clients see
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    purpose: Mapped[str] = mapped_column(String(16))  # "card", or "thumbnail" or "captions" of card_id
    card_id: Mapped[str | None] = mapped_column(String(64))
    object_key: Mapped[str] = mapped_column(Text)
    file_name: Mapped[str] = mapped_column(String(255))
    declared_size: Mapped[int] = mapped_column(BigInteger)
    declared_type: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[int] = mapped_column(BigInteger, index=True)
    expires_at: Mapped[int] = mapped_column(BigInteger)  # of its upload URL
    attached_at: Mapped[int | None] = mapped_column(BigInteger)


class DoomedObject(Base):
    """An object of the blob store whose card is gone (or holds another now): a worker deletes
    it. Rows are written by triggers (migration 0007)."""

    __tablename__ = "doomed_objects"

    key: Mapped[str] = mapped_column(String(1024), primary_key=True)
    doomed_at: Mapped[int] = mapped_column(BigInteger)
