"""Models of webhooks: an account's endpoints, and each event's delivery to one of them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Webhook(Base):
    """An endpoint the account's events are sent to, signed with its secret (and, for a day
    after a rotation, with the one before)."""

    __tablename__ = "webhooks"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(JSON)  # event types, or ["*"]
    description: Mapped[str] = mapped_column(String(200))
    secret: Mapped[str] = mapped_column(String(128))  # whsec_ + base64
    previous_secret: Mapped[str | None] = mapped_column(String(128))
    previous_until: Mapped[int | None] = mapped_column(BigInteger)  # the previous one signs until then
    enabled: Mapped[bool] = mapped_column(Boolean)
    disabled_reason: Mapped[str | None] = mapped_column(String(32))  # GONE, FAILING, USER or REVOKED
    disabled_at: Mapped[int | None] = mapped_column(BigInteger)
    # The account's change sequence up to which changes became deliveries to this endpoint.
    position: Mapped[int] = mapped_column(BigInteger)
    paused_until: Mapped[int | None] = mapped_column(BigInteger)  # slowed down by 429/502/504
    # The batch being sent to it (a delivery lease) and until when: an account's endpoints
    # being sent to at once are counted, so its slow ones hold only so many worker threads.
    sending_lease: Mapped[str | None] = mapped_column(String(32))
    sending_until: Mapped[int | None] = mapped_column(BigInteger)
    # The credential that made (or last enabled) it: an API key's id, or an app's grant id.
    # Revoking it disables the endpoint (REVOKED). None: made before endpoints were tied.
    credential_id: Mapped[str | None] = mapped_column(String(64), index=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    # Raised by every write (cardvault.domain.versions): the resource's ETag.
    version: Mapped[int] = mapped_column(BigInteger, default=1, server_default=text("1"))


class WebhookDelivery(Base):
    """One event for one endpoint, its body fixed when it was made (every attempt sends the same
    bytes under the same ``webhook-id``, its id), and what each attempt met."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_endpoint", "webhook_id", "created_at", "id"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # msg_...: the webhook-id header
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(48))
    sequence: Mapped[int | None] = mapped_column(BigInteger)  # the change's; None for a ping
    body: Mapped[str] = mapped_column(Text)  # the JSON sent, byte for byte on every attempt
    status: Mapped[str] = mapped_column(String(16))  # pending, succeeded, failed
    attempts: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[int | None] = mapped_column(BigInteger)  # None once it has ended
    manual: Mapped[bool] = mapped_column(Boolean)  # a retry asked for: one attempt, no schedule
    lease: Mapped[str | None] = mapped_column(String(32))  # the attempt under way
    lease_until: Mapped[int | None] = mapped_column(BigInteger)
    log: Mapped[list[dict[str, Any]]] = mapped_column(JSON)  # the attempts, oldest first
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
