"""Models of feed subscriptions: an RSS, Atom or JSON feed the workers poll for an account."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Subscription(Base):
    """A feed followed for an account: each new entry becomes a link card (its tags and folder
    applied); polled no sooner than ``next_poll_at``, with the validators of the last answer."""

    __tablename__ = "subscriptions"
    __table_args__ = (
        Index("ix_subscriptions_account_created", "account_id", "created_at", "id"),
        Index("ix_subscriptions_due", "next_poll_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(300))  # polls of one host take turns
    tags: Mapped[list[str]] = mapped_column(JSON)
    folder_id: Mapped[str | None] = mapped_column(ForeignKey("folders.id", ondelete="SET NULL"))
    etag: Mapped[str | None] = mapped_column(Text)
    last_modified: Mapped[str | None] = mapped_column(String(100))
    next_poll_at: Mapped[int] = mapped_column(BigInteger)
    last_polled_at: Mapped[int | None] = mapped_column(BigInteger)
    last_error: Mapped[str | None] = mapped_column(String(32))  # the code of the last poll's failure
    last_error_message: Mapped[str | None] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer)  # polls failed in a row (the backoff's)
    entries_saved: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
