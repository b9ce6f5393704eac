"""Models of folders and the cards in them."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Folder(Base):
    """A named, coloured group of cards; names are unique per account ignoring case."""

    __tablename__ = "folders"
    __table_args__ = (UniqueConstraint("account_id", "name_key"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(300))
    name_key: Mapped[str] = mapped_column(String(1200))
    color: Mapped[str | None] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(16))  # manual | smart
    query: Mapped[str | None] = mapped_column(Text)  # a smart folder's (the q grammar)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    # Raised by every write (cardvault.domain.versions): the resource's ETag.
    version: Mapped[int] = mapped_column(BigInteger, default=1, server_default=text("1"))


class FolderCard(Base):
    """A card in a folder."""

    __tablename__ = "folder_cards"
    __table_args__ = (Index("ix_folder_cards_folder_created", "folder_id", "card_created_at", "card_pk"),)

    folder_id: Mapped[str] = mapped_column(ForeignKey("folders.id", ondelete="CASCADE"), primary_key=True)
    card_pk: Mapped[int] = mapped_column(
        ForeignKey("cards.pk", ondelete="CASCADE"), primary_key=True, index=True
    )
    added_at: Mapped[int] = mapped_column(BigInteger)
    card_created_at: Mapped[int] = mapped_column(BigInteger)  # as on CardTag
