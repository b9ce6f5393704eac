"""Tag rules shared by every place that takes a tag: trimmed, 1 to 64 characters, no control
characters, visible at both ends, compared ignoring case."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from cardvault.domain.errors import InvalidTag
from cardvault.domain.names import tag_key

MAX_TAG_LENGTH = 64
# Invisible format characters, which a tag may neither begin nor end with (so no tag is blank
# or differs from another only by them); the spec's TagName pattern names the same set.
_INVISIBLE = re.compile("[\xad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def clean_tag(raw: str) -> str:
    """Return the tag trimmed, or raise InvalidTag naming it."""
    tag = raw.strip()
    if not tag:
        raise InvalidTag(raw, "it is empty")
    if len(tag) > MAX_TAG_LENGTH:
        raise InvalidTag(raw, f"it is longer than {MAX_TAG_LENGTH} characters")
    if any(unicodedata.category(char) == "Cc" for char in tag):
        raise InvalidTag(raw, "it contains a control character")
    if _INVISIBLE.match(tag[0]) or _INVISIBLE.match(tag[-1]):
        raise InvalidTag(raw, "it begins or ends with an invisible character")
    return tag


def clean_tags(raws: Iterable[str]) -> list[str]:
    """Clean each tag and drop later duplicates that differ only in case."""
    seen: set[str] = set()
    tags = []
    for raw in raws:
        tag = clean_tag(raw)
        key = tag_key(tag)
        if key not in seen:
            seen.add(key)
            tags.append(tag)
    return tags
