"""Models of the changes feed: each account's changes in commit order, and its counter."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Change(Base):
    """The latest change of one resource of an account (an earlier one of the same resource is
    replaced): its place in the account's feed, and whether it now exists or was deleted."""

    __tablename__ = "changes"
    __table_args__ = (
        Index("ix_changes_resource", "account_id", "kind", "resource_id", unique=True),
        Index("ix_changes_changed", "changed_at"),
    )

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    sequence: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))  # card, folder, ...
    resource_id: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(8))  # upsert or delete
    changed_at: Mapped[int] = mapped_column(BigInteger)


class ChangeCounter(Base):
    """An account's last change sequence, taken (and its row locked) by each writing
    transaction just before it commits, so sequences are given in commit order; and the
    highest sequence purged (a cursor before it has lost changes)."""

    __tablename__ = "change_counters"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    last_sequence: Mapped[int] = mapped_column(BigInteger, default=0)
    purged_through: Mapped[int] = mapped_column(BigInteger, default=0)
