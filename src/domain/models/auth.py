"""Models of signing in: accounts, API keys, OAuth clients, grants, codes and tokens, and browser sessions."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(800), unique=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    email: Mapped[str | None] = mapped_column(String(320))
    email_key: Mapped[str | None] = mapped_column(String(320))  # lowercased: unique ignoring case
    password_hash: Mapped[str | None] = mapped_column(Text)  # None: no sign-in, API keys only
    # What the storage quotas count, in bytes (cardvault.domain.files.quotas): the declared sizes
    # of its uploads no card has taken yet, and the file sizes of its cards (Trash included).
    # Moved in the transaction of every change to those rows, so a quota check reads one row.
    pending_upload_bytes: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    stored_file_bytes: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    # The cards it holds, Trash included (cardvault.domain.cards.holdings), moved likewise.
    cards_held: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))

    __table_args__ = (Index("uq_accounts_email_key", "email_key", unique=True),)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)
    name: Mapped[str] = mapped_column(String(100), server_default="")
    last_chars: Mapped[str | None] = mapped_column(String(8))  # None: made before keys kept them
    scopes: Mapped[str] = mapped_column(String(100), server_default="read write keys")
    last_used_at: Mapped[int | None] = mapped_column(BigInteger)
    grant_id: Mapped[str | None] = mapped_column(String(64), index=True)  # made by an app: ends with it

    __table_args__ = (Index("ix_api_keys_account_created", "account_id", "created_at"),)


class OAuthClient(Base):
    """An application registered to sign people in (``cardvault clients create``)."""

    __tablename__ = "oauth_clients"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    redirect_uris: Mapped[list[str]] = mapped_column(JSON)
    scopes: Mapped[str] = mapped_column(String(100))  # what it may ask for, space-separated
    secret_hash: Mapped[str | None] = mapped_column(String(64))  # None: a public client
    created_at: Mapped[int] = mapped_column(BigInteger)
    # A client that registered itself (RFC 7591) ends then unless an account allows it first;
    # None for the clients an operator made, and once one is used.
    expires_at: Mapped[int | None] = mapped_column(BigInteger, index=True)
    # Registered itself (RFC 7591), for good: the consent page warns of it whoever allowed it.
    registered_dynamically: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class OAuthGrant(Base):
    """What an account allowed a client: one refresh token family. Revoking it ends every token
    it issued."""

    __tablename__ = "oauth_grants"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"))
    scopes: Mapped[str] = mapped_column(String(100))
    resource: Mapped[str | None] = mapped_column(String(300))  # RFC 8707: its tokens' audience
    created_at: Mapped[int] = mapped_column(BigInteger)
    refreshed_at: Mapped[int] = mapped_column(BigInteger)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)


class OAuthCode(Base):
    """An authorization code, kept by its hash; used once."""

    __tablename__ = "oauth_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    redirect_uri: Mapped[str] = mapped_column(Text)
    scopes: Mapped[str] = mapped_column(String(100))
    code_challenge: Mapped[str] = mapped_column(String(128))  # S256, always
    resource: Mapped[str | None] = mapped_column(String(300))  # RFC 8707, as the request named it
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
    used_at: Mapped[int | None] = mapped_column(BigInteger)
    grant_id: Mapped[str | None] = mapped_column(String(64))


class OAuthToken(Base):
    """An access or refresh token of a grant, kept by its hash."""

    __tablename__ = "oauth_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    grant_id: Mapped[str] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(8))  # access | refresh
    scopes: Mapped[str] = mapped_column(String(100))  # an access token's may be narrower than its grant's
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
    spent_at: Mapped[int | None] = mapped_column(BigInteger)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (CheckConstraint("kind IN ('access', 'refresh')", name="kind"),)


class WebSession(Base):
    """A browser's signed-in session on the sign-in, consent and card pages."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)


class SignInLink(Base):
    """A one-time sign-in link (the embedded default prints one at start-up for its local
    account, which has no password): used once, or never after it expires."""

    __tablename__ = "sign_in_links"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
