"""Models of cards: the card itself and its tags (user and AI)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, false, text
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates

from cardvault.domain.models.declarative import SERIAL, Base
from cardvault.domain.urls import url_key, url_site

if TYPE_CHECKING:
    from cardvault.domain.models.folders import FolderCard

_IN_TRASH = text("deleted_at IS NOT NULL")
_URL_KEYED = text("url_key IS NOT NULL")
_SITED = text("url_site IS NOT NULL")


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
        Index(
            "ix_cards_account_url",
            "account_id",
            "url_key",
            postgresql_where=_URL_KEYED,
            sqlite_where=_URL_KEYED,
        ),
        Index(
            "ix_cards_account_site", "account_id", "url_site", postgresql_where=_SITED, sqlite_where=_SITED
        ),
    )

    pk: Mapped[int] = mapped_column(SERIAL, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    notes: Mapped[str | None] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(Text)
    # The key of the url's normal form (cardvault.domain.urls), kept by _key_url.
    url_key: Mapped[str | None] = mapped_column(String(32))
    # The url's host as a site key (cardvault.domain.urls.site_key), kept by _key_url;
    # compared by bytes (PostgreSQL: COLLATE "C", migration 0025).
    url_site: Mapped[str | None] = mapped_column(String(256))
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
    # What a link's page says (cardvault.adapters.pages.Page.stored()): read with the card only.
    link_meta: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    ai_summary: Mapped[str | None] = mapped_column(Text)
    ai_transcript: Mapped[str | None] = mapped_column(Text)
    transcript_source: Mapped[str | None] = mapped_column(String(16))  # subtitles, captions, speech
    # The words the ocr stage read in its image, scanned PDF or link screenshot (at most 256 KiB),
    # and what read them: {"engine", "languages", "pages"}.
    file_text: Mapped[str | None] = mapped_column(Text)
    ocr_facts: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Which engine wrote the AI summary and tags: {"kind", "model", "language"}.
    ai_engine: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # How many distinct words its headline and body have in the full-text index (its length to
    # relevance), kept by cardvault.domain.search.index.
    search_words: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The text of a link's page or of a document, the AI stage's input (read with the card only).
    source_text: Mapped[str | None] = mapped_column(Text, deferred=True)
    colors: Mapped[list[str] | None] = mapped_column(JSON)  # an image's main colours, "#rrggbb"
    duration_ms: Mapped[int | None] = mapped_column(BigInteger)  # an audio or video file's
    waveform: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {"detail": [...], "grid": [...]}
    # A video's scrub strip: {"frameWidth", "frameHeight", "frames", "columns"}, and its sprite.
    scrub: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    scrub_object: Mapped[str | None] = mapped_column(Text)
    # An audio or video card's caption file (cardvault.domain.cards.captions): its object, what it is
    # ({"fileName", "format", "size", "cueCount"}) and its cues' text (read with the card only).
    captions_object: Mapped[str | None] = mapped_column(Text)
    captions: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    captions_text: Mapped[str | None] = mapped_column(Text, deferred=True)
    # A link's capture (the capture stage): its first screen (1280 x 800 WebP) with 256 px and
    # 48 px renditions, its archive (MHTML), its reader view (Markdown), and what they are
    # ({"capturedAt", "finalUrl", "archive": {"size"}, "reader": {"size", "wordCount"},
    # "archiveOmitted"}).
    screenshot_object: Mapped[str | None] = mapped_column(Text)
    screenshot_compact_object: Mapped[str | None] = mapped_column(Text)
    screenshot_placeholder_object: Mapped[str | None] = mapped_column(Text)
    archive_object: Mapped[str | None] = mapped_column(Text)
    reader_object: Mapped[str | None] = mapped_column(Text)
    capture: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # What the card's objects beyond its file hold (cardvault.domain.files.held): each one's
    # bytes by its column, and their sum, which the account's stored bytes count.
    held_sizes: Mapped[dict[str, int] | None] = mapped_column(JSON)
    held_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    is_favorited: Mapped[bool] = mapped_column(Boolean, default=False)
    completed_at: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    deleted_at: Mapped[int | None] = mapped_column(BigInteger)  # set while in Trash
    archived_at: Mapped[int | None] = mapped_column(BigInteger)
    # How many annotations the card holds (cardvault.domain.annotations keeps it).
    annotation_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    # Raised by every write (cardvault.domain.versions): the resource's ETag.
    version: Mapped[int] = mapped_column(BigInteger, default=1, server_default=text("1"))

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

    @validates("url")
    def _key_url(self, _name: str, url: str | None) -> str | None:
        self.url_key, self.url_site = url_key(url), url_site(url)
        return url

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
