"""Models of annotations: a passage of a card's text with a note and a colour, or a note on the
card as a whole (cardvault.domain.annotations)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import SERIAL, Base


class Annotation(Base):
    __tablename__ = "annotations"
    __table_args__ = (
        # A card's annotations in text order (listCardAnnotations), and the account's newest
        # first (listAnnotations).
        Index("ix_annotations_card_start", "card_pk", "start", "pk"),
        Index("ix_annotations_account_created", "account_id", "created_at", "pk"),
    )

    pk: Mapped[int] = mapped_column(SERIAL, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    # Purged with its card: the database deletes it when the card goes.
    card_pk: Mapped[int] = mapped_column(ForeignKey("cards.pk", ondelete="CASCADE"))
    card_id: Mapped[str] = mapped_column(String(64))
    quote: Mapped[str | None] = mapped_column(Text)  # null: a note on the card as a whole
    prefix: Mapped[str | None] = mapped_column(Text)
    suffix: Mapped[str | None] = mapped_column(Text)
    # Where the quote is (code points, end exclusive) in which of the card's texts; all null
    # while it is not placed.
    source: Mapped[str | None] = mapped_column(String(16))
    start: Mapped[int | None] = mapped_column(Integer)
    end: Mapped[int | None] = mapped_column(Integer)
    orphaned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    note: Mapped[str | None] = mapped_column(Text)
    color: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
