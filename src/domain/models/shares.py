"""Models of share links: a card or a folder, readable by anyone holding the link's token."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Share(Base):
    """A share of one card (``card_pk``) or of one folder (``folder_id``); found by the SHA-256
    of its token (cardvault.domain.auth.credentials), never by the token itself. Deleting the
    card or the folder deletes the share."""

    __tablename__ = "shares"
    __table_args__ = (Index("ix_shares_account_created", "account_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    card_pk: Mapped[int | None] = mapped_column(ForeignKey("cards.pk", ondelete="CASCADE"), index=True)
    folder_id: Mapped[str | None] = mapped_column(ForeignKey("folders.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str | None] = mapped_column(String(300))
    include_notes: Mapped[bool] = mapped_column(Boolean)
    expires_at: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
