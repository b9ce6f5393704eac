"""Models of the processing pipeline: each card's stages and their state, and the state a
card's stages sum to (in Python and in SQL: listings and search filter by it)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    String,
    exists,
    false,
    literal_column,
    select,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.cards import Card
from cardvault.domain.models.declarative import Base

STATES = ("pending", "running", "completed", "failed", "skipped")


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


def in_state(state: str) -> ColumnElement[bool]:
    """A condition on a card: its pipeline's state (as ``summary_state`` sums it) is ``state``."""

    def having(*states: str) -> ColumnElement[bool]:
        # The states are written into the SQL (card listings compile it once, with no
        # expanding parameters): they are our own constants.
        assert set(states) <= set(STATES)
        rows = select(CardStage.card_pk).where(CardStage.card_pk == Card.pk)
        return exists(rows.where(CardStage.state.in_([literal_column(f"'{s}'") for s in states])))

    settled_only = ~having("failed", "running", "pending")
    conditions = {
        "failed": having("failed"),
        "running": ~having("failed") & having("running"),
        "pending": ~having("failed", "running") & having("pending"),
        "completed": settled_only & having("completed"),
        "skipped": having("skipped") & ~having("failed", "running", "pending", "completed"),
    }
    return conditions[state]


def summary_state(states: set[str]) -> str:
    """The pipeline's state from its stages': failed if any failed, else running, else
    pending, else skipped if all were, else completed."""
    return next(
        (s for s in ("failed", "running", "pending") if s in states),
        "skipped" if states == {"skipped"} else "completed",
    )
