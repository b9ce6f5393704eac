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
