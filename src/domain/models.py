"""ORM models. Times are integer milliseconds since the epoch, as the API shows them."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    select,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from cardvault.domain.errors import NotFound

# SQLite only makes INTEGER PRIMARY KEY an alias of the rowid (and so auto-increment).
SERIAL = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(800), unique=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    email: Mapped[str | None] = mapped_column(String(320))
    email_key: Mapped[str | None] = mapped_column(String(320))  # lowercased: unique ignoring case
    password_hash: Mapped[str | None] = mapped_column(Text)  # None: no sign-in, API keys only

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


class OAuthGrant(Base):
    """What an account allowed a client: one refresh token family. Revoking it ends every token
    it issued."""

    __tablename__ = "oauth_grants"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"))
    scopes: Mapped[str] = mapped_column(String(100))
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


_IN_TRASH = text("deleted_at IS NOT NULL")


class Card(Base):
    __tablename__ = "cards"
    __table_args__ = (
        Index("ix_cards_account_created", "account_id", "created_at", "pk"),
        # Only cards in Trash (migration 0004 says why).
        Index("ix_cards_deleted_at", "deleted_at", postgresql_where=_IN_TRASH, sqlite_where=_IN_TRASH),
        Index(
            "ix_cards_account_trash",
            "account_id",
            "deleted_at",
            "pk",
            postgresql_where=_IN_TRASH,
            sqlite_where=_IN_TRASH,
        ),
    )

    pk: Mapped[int] = mapped_column(SERIAL, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    notes: Mapped[str | None] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(String(200))
    file_name: Mapped[str | None] = mapped_column(String(255))
    file_size: Mapped[int | None] = mapped_column(BigInteger)
    mime_type: Mapped[str | None] = mapped_column(String(255))
    file_object: Mapped[str | None] = mapped_column(Text)  # the blob store's key of the file
    file_etag: Mapped[str | None] = mapped_column(String(128))
    file_kind: Mapped[str | None] = mapped_column(String(16))
    file_extension: Mapped[str | None] = mapped_column(String(32))
    file_language: Mapped[str | None] = mapped_column(String(32))
    file_width: Mapped[int | None] = mapped_column(Integer)
    file_height: Mapped[int | None] = mapped_column(Integer)
    file_preview: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    compact_object: Mapped[str | None] = mapped_column(Text)  # 256 px WebP rendition
    placeholder_object: Mapped[str | None] = mapped_column(Text)  # 48 px WebP rendition
    thumbnail_object: Mapped[str | None] = mapped_column(Text)  # a link's replaced image (WebP)
    thumbnail_overridden: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    metadata_title: Mapped[str | None] = mapped_column(Text)
    metadata_description: Mapped[str | None] = mapped_column(Text)
    # What a link's page says (cardvault.domain.link_pages.Page.stored()): read with the card only.
    link_meta: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    ai_summary: Mapped[str | None] = mapped_column(Text)
    ai_transcript: Mapped[str | None] = mapped_column(Text)
    transcript_source: Mapped[str | None] = mapped_column(String(16))  # subtitles, captions, speech
    # Which engine wrote the AI summary and tags: {"kind", "model", "language"}.
    ai_engine: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The text of a link's page or of a document, the AI stage's input (read with the card only).
    source_text: Mapped[str | None] = mapped_column(Text, deferred=True)
    colors: Mapped[list[str] | None] = mapped_column(JSON)  # an image's main colours, "#rrggbb"
    duration_ms: Mapped[int | None] = mapped_column(BigInteger)  # an audio or video file's
    waveform: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {"detail": [...], "grid": [...]}
    # A video's scrub strip: {"frameWidth", "frameHeight", "frames", "columns"}, and its sprite.
    scrub: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    scrub_object: Mapped[str | None] = mapped_column(Text)
    # An audio or video card's caption file (cardvault.domain.captions): its object, what it is
    # ({"fileName", "format", "size", "cueCount"}) and its cues' text (read with the card only).
    captions_object: Mapped[str | None] = mapped_column(Text)
    captions: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    captions_text: Mapped[str | None] = mapped_column(Text, deferred=True)
    is_favorited: Mapped[bool] = mapped_column(Boolean, default=False)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    deleted_at: Mapped[int | None] = mapped_column(BigInteger)  # set while in Trash
    archived_at: Mapped[int | None] = mapped_column(BigInteger)

    folder_rows: Mapped[list[FolderCard]] = relationship(
        cascade="all, delete-orphan", lazy="selectin", passive_deletes=True, order_by="FolderCard.added_at"
    )
    tag_rows: Mapped[list[CardTag]] = relationship(
        back_populates="card",
        cascade="all, delete-orphan",
        order_by="CardTag.position",
        lazy="selectin",
        passive_deletes=True,
    )

    @property
    def folder_ids(self) -> list[str]:
        """The folders holding the card, in the order it was added to them."""
        return [row.folder_id for row in self.folder_rows]

    @property
    def tags(self) -> list[str]:
        """The user's tags, in the order given."""
        return self._names("user")

    @property
    def ai_tags(self) -> list[str]:
        """The tags the AI step chose, in its order."""
        return self._names("ai")

    def _names(self, kind: str) -> list[str]:
        rows = sorted((row for row in self.tag_rows if row.kind == kind), key=lambda r: r.position)
        return [row.name for row in rows]


class CardTag(Base):
    """One tag on one card: a user tag (``kind='user'``) or an AI tag (``kind='ai'``)."""

    __tablename__ = "card_tags"
    __table_args__ = (
        Index("ix_card_tags_account_key", "account_id", "name_key", "card_pk"),
        Index("ix_card_tags_account_key_created", "account_id", "name_key", "card_created_at", "card_pk"),
    )

    card_pk: Mapped[int] = mapped_column(ForeignKey("cards.pk", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    name_key: Mapped[str] = mapped_column(String(256), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer)
    account_id: Mapped[str] = mapped_column(String(64))
    # The tag's folded words, space-delimited (and at both ends), which a full-text index of
    # their own makes searchable (migration 0004). Kept here, not in the card's full-text row,
    # so tag operations never re-read card content.
    words: Mapped[str] = mapped_column(String(400))
    # The card's createdAt (which never changes), so a tag's cards can be read in list order
    # straight from ix_card_tags_account_key_created.
    card_created_at: Mapped[int] = mapped_column(BigInteger)

    card: Mapped[Card] = relationship(back_populates="tag_rows")


class TagCounter(Base):
    """How many of the account's cards outside Trash carry a tag (cardvault.domain.tag_counts)."""

    __tablename__ = "tag_counters"
    __table_args__ = (Index("ix_tag_counters_account_cards", "account_id", text("cards DESC"), "name_key"),)

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    name_key: Mapped[str] = mapped_column(String(256), primary_key=True)
    cards: Mapped[int] = mapped_column(Integer)


class TagSpelling(Base):
    """How many tag rows of the account's cards outside Trash spell a tag this way."""

    __tablename__ = "tag_spellings"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    name_key: Mapped[str] = mapped_column(String(256), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    uses: Mapped[int] = mapped_column(Integer)


class TagOperation(Base):
    """An account-wide rename, merge or delete of a tag; the row is the truth about its progress."""

    __tablename__ = "tag_operations"
    __table_args__ = (Index("ix_tag_operations_status_heartbeat", "status", "heartbeat_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    running_account_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(8))
    from_name: Mapped[str] = mapped_column(String(256))
    from_key: Mapped[str] = mapped_column(String(256))
    to_name: Mapped[str | None] = mapped_column(String(64))
    to_key: Mapped[str | None] = mapped_column(String(256))
    status: Mapped[str] = mapped_column(String(16))
    total: Mapped[int] = mapped_column(Integer)
    processed: Mapped[int] = mapped_column(Integer)
    changed: Mapped[int] = mapped_column(Integer)
    cursor_pk: Mapped[int] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    heartbeat_at: Mapped[int] = mapped_column(BigInteger)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)


class Folder(Base):
    """A named, coloured group of cards; names are unique per account ignoring case."""

    __tablename__ = "folders"
    __table_args__ = (UniqueConstraint("account_id", "name_key"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(300))
    name_key: Mapped[str] = mapped_column(String(1200))
    color: Mapped[str | None] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)


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


class Upload(Base):
    """A file a client was given a URL to upload, until a card takes it (or 24 hours pass)."""

    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the fileKey clients see
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    purpose: Mapped[str] = mapped_column(String(16))  # "card", or "thumbnail" or "captions" of card_id
    card_id: Mapped[str | None] = mapped_column(String(64))
    object_key: Mapped[str] = mapped_column(Text)
    file_name: Mapped[str] = mapped_column(String(255))
    declared_size: Mapped[int] = mapped_column(BigInteger)
    declared_type: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[int] = mapped_column(BigInteger, index=True)
    expires_at: Mapped[int] = mapped_column(BigInteger)  # of its upload URL
    attached_at: Mapped[int | None] = mapped_column(BigInteger)


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


class DoomedObject(Base):
    """An object of the blob store whose card is gone (or holds another now): a worker deletes
    it. Rows are written by triggers (migration 0007)."""

    __tablename__ = "doomed_objects"

    key: Mapped[str] = mapped_column(String(1024), primary_key=True)
    doomed_at: Mapped[int] = mapped_column(BigInteger)


class ExportJob(Base):
    """A ZIP export of an account (cardvault.domain.exports); the row is the truth about it."""

    __tablename__ = "export_jobs"
    __table_args__ = (
        Index("ix_export_jobs_account_created", "account_id", "created_at"),
        Index("ix_export_jobs_status_heartbeat", "status", "heartbeat_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    # The account id while the job is pending or running, NULL after: one active job per account.
    active_account_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    status: Mapped[str] = mapped_column(String(16))
    stage: Mapped[str | None] = mapped_column(String(16))
    failure_class: Mapped[str | None] = mapped_column(String(32))
    processed_count: Mapped[int] = mapped_column(Integer)
    card_count: Mapped[int | None] = mapped_column(Integer)
    files_included: Mapped[int | None] = mapped_column(Integer)
    files_omitted: Mapped[int | None] = mapped_column(Integer)
    files_unreadable: Mapped[int | None] = mapped_column(Integer)  # of the omitted: not read
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    last_card_pk: Mapped[int] = mapped_column(BigInteger)  # the newest card the export takes
    cursor_pk: Mapped[int] = mapped_column(BigInteger)  # snapshotting's progress
    attempts: Mapped[int] = mapped_column(Integer)
    lease: Mapped[str | None] = mapped_column(String(32))  # the working attempt's
    object_key: Mapped[str | None] = mapped_column(Text)  # the archive, once ready
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    heartbeat_at: Mapped[int] = mapped_column(BigInteger)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
    expires_at: Mapped[int | None] = mapped_column(BigInteger)


class ExportItem(Base):
    """One card of an export as snapshotting read it, and what archiving did with its files."""

    __tablename__ = "export_items"

    job_id: Mapped[str] = mapped_column(ForeignKey("export_jobs.id", ondelete="CASCADE"), primary_key=True)
    card_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    record: Mapped[dict[str, Any]] = mapped_column(JSON)  # the card as cards.json shows it
    file_object: Mapped[str | None] = mapped_column(Text)
    captions_object: Mapped[str | None] = mapped_column(Text)
    # Set by archiving: {"file": {"path", "size", "sha256"} | {"omitted": reason}, "captions": ...}
    archived: Mapped[dict[str, Any] | None] = mapped_column(JSON)


Owned = TypeVar("Owned", Card, Folder, TagOperation, ExportJob)


def get_owned(
    session: Session, model: type[Owned], *, row_id: str, account_id: str, for_update: bool = False
) -> Owned:
    """Return the account's row with this id, or raise NotFound: another account's id answers
    exactly like a missing one. Writers pass ``for_update`` to lock the row until they commit."""
    query = select(model).where(model.id == row_id, model.account_id == account_id)
    row = session.scalar(query.with_for_update() if for_update else query)
    if row is None:
        raise NotFound(f"{_NAMES[model]} not found.")
    return row


_NAMES: dict[type[Base], str] = {
    Card: "Card",
    Folder: "Folder",
    TagOperation: "Tag operation",
    ExportJob: "Export",
}
