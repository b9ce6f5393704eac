"""The key a name is compared by, ignoring case: a tag's (cardvault.domain.tags.names cleans
tags), a folder's and an account's name, and the tag a search or a listing filters by."""

from __future__ import annotations

import unicodedata


def tag_key(name: str) -> str:
    """Return the comparison key of a tag (or a folder's or an account's name): its canonical
    caseless form (Unicode case folding)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())
