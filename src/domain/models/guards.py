"""Models of the HTTP-edge guards: responses kept for Idempotency-Key replays."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class IdempotencyKey(Base):
    """The first successful response to a request sent with an Idempotency-Key, replayed to
    the same request sent again with the key (for 24 hours)."""

    __tablename__ = "idempotency_keys"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))  # of the operation, path and body
    status: Mapped[int] = mapped_column(Integer)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    headers: Mapped[dict[str, str]] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger, index=True)
