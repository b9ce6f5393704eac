"""Models of the processing pipeline: each card's stages and their state."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, false, text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class CardStage(Base):
    """One processing stage of one card: its state is the truth the workers go by."""

    __tablename__ = "card_stages"
    __table_args__ = (
        Index(
            "ix_card_stages_unsettled",
            "updated_at",
            postgresql_where=text("state IN ('pending', 'running')"),
            sqlite_where=text("state IN ('pending', 'running')"),
        ),
        Index(
            "ix_card_stages_waiting",
            "turn_account_id",
            "card_pk",
            postgresql_where=text("turn_account_id IS NOT NULL AND turn_at IS NULL"),
            sqlite_where=text("turn_account_id IS NOT NULL AND turn_at IS NULL"),
        ),
        Index(
            "ix_card_stages_in_flight",
            "turn_account_id",
            postgresql_where=text("turn_at IS NOT NULL AND state IN ('pending', 'running')"),
            sqlite_where=text("turn_at IS NOT NULL AND state IN ('pending', 'running')"),
        ),
    )

    card_pk: Mapped[int] = mapped_column(ForeignKey("cards.pk", ondelete="CASCADE"), primary_key=True)
    stage: Mapped[str] = mapped_column(String(16), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))  # pending, running, completed, failed, skipped
    attempts: Mapped[int] = mapped_column(Integer)
    error_code: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[int | None] = mapped_column(BigInteger)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    lease: Mapped[str | None] = mapped_column(String(32))  # the running attempt's; its result needs it
    # Queued by an import: sent to the imported queue, and paced per host (cardvault.workers.pipeline).
    imported: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # An import's stage waits for its account's turn (cardvault.domain.portability.imports.turns):
    # the account, and when the stage was sent (NULL: waiting; no message exists for it).
    turn_account_id: Mapped[str | None] = mapped_column(String(64))
    turn_at: Mapped[int | None] = mapped_column(BigInteger)


class ImportTurn(Base):
    """An account whose imports' stages wait for their turns, and when it was last served."""

    __tablename__ = "import_turns"
    __table_args__ = (Index("ix_import_turns_served_at", "served_at"),)

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    served_at: Mapped[int] = mapped_column(BigInteger)
