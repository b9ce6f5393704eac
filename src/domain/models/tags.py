"""Models of an account's tags: their counts and spellings, and account-wide tag operations."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class TagCounter(Base):
    """How many of the account's cards outside Trash carry a tag (cardvault.domain.tags.counts)."""

    __tablename__ = "tag_counters"
    __table_args__ = (Index("ix_tag_counters_account_cards", "account_id", text("cards DESC"), "name_key"),)

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    name_key: Mapped[str] = mapped_column(String(256), primary_key=True)
    cards: Mapped[int] = mapped_column(Integer)


class TagSpelling(Base):
    """How many tag rows of the account's cards outside Trash spell a tag this way."""

    __tablename__ = "tag_spellings"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    name_key: Mapped[str] = mapped_column(String(256), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    uses: Mapped[int] = mapped_column(Integer)


class TagOperation(Base):
    """An account-wide rename, merge or delete of a tag; the row is the truth about its progress."""

    __tablename__ = "tag_operations"
    __table_args__ = (Index("ix_tag_operations_status_heartbeat", "status", "heartbeat_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    running_account_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(8))
    from_name: Mapped[str] = mapped_column(String(256))
    from_key: Mapped[str] = mapped_column(String(256))
    to_name: Mapped[str | None] = mapped_column(String(64))
    to_key: Mapped[str | None] = mapped_column(String(256))
    status: Mapped[str] = mapped_column(String(16))
    total: Mapped[int] = mapped_column(Integer)
    processed: Mapped[int] = mapped_column(Integer)
    changed: Mapped[int] = mapped_column(Integer)
    cursor_pk: Mapped[int] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    heartbeat_at: Mapped[int] = mapped_column(BigInteger)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
