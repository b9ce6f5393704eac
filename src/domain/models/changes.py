"""Models of the changes feed: each account's changes in commit order, and its counter."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, text
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
    kind: Mapped[str] = mapped_column(String(32))  # card, folder, tag, tagOperation, export
    resource_id: Mapped[str] = mapped_column(String(256))  # a tag's is its folded name
    action: Mapped[str] = mapped_column(String(8))  # upsert or delete
    changed_at: Mapped[int] = mapped_column(BigInteger)
    # The last sequence at which the resource was created, and at which its processing settled
    # (0: not since it was first recorded): an endpoint whose position is below them is told.
    created_sequence: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    processed_sequence: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))


class ChangeCounter(Base):
    """An account's last change sequence, taken (and its row locked) by each writing
    transaction just before it commits, so sequences are given in commit order; and the
    highest sequence purged (a cursor before it has lost changes)."""

    __tablename__ = "change_counters"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    last_sequence: Mapped[int] = mapped_column(BigInteger, default=0)
    purged_through: Mapped[int] = mapped_column(BigInteger, default=0)
    webhooks: Mapped[int] = mapped_column(
        Integer, server_default=text("0")
    )  # enabled endpoints: announce changes
