"""The model of an account's search vocabulary (cardvault.domain.search.vocabulary)."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from cardvault.domain.models.declarative import Base


class SearchWord(Base):
    """A word of the account's cards' headlines and bodies, its stem and how many cards hold it
    (Trash included until purged). The typo lookup's trigram index is the migration's (0030):
    PostgreSQL a GIN index of (account_id, word) with pg_trgm, SQLite the FTS5 table
    ``search_word_grams`` kept by triggers."""

    __tablename__ = "search_words"
    __table_args__ = (Index("ix_search_words_account_stem", "account_id", "stem"),)

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    # In code point order on PostgreSQL (collation "C"): a beginning's words are one range.
    word: Mapped[str] = mapped_column(
        String(100).with_variant(String(100, collation="C"), "postgresql"), primary_key=True
    )
    stem: Mapped[str] = mapped_column(String(100))
    cards: Mapped[int] = mapped_column(BigInteger)
