"""What a card listing asks for: its parameters, and q's qualifiers merged into them where the
list has a parameter of its own (cardvault.domain.search.query parses q)."""

from __future__ import annotations

import dataclasses

from cardvault.domain.errors import InvalidTag
from cardvault.domain.names import tag_key
from cardvault.domain.search.query import Qualifier, Query, parse
from cardvault.domain.tags.names import clean_tag


@dataclasses.dataclass(frozen=True)
class CardFilter:
    """What a listing asks for, apart from paging. ``sort`` None: by relevance when ``q`` has
    words to find, else newest first; ``archived`` None: ``exclude``, unless ``q`` holds
    ``is:archived``."""

    sort: str | None = None
    card_types: tuple[str, ...] = ()  # any of them (OR)
    tags: tuple[str, ...] = ()  # every one of them (AND)
    favorited: bool | None = None
    created_after: int | None = None
    created_before: int | None = None
    q: str | None = None
    archived: str | None = None  # exclude | include | only
    folders: tuple[str, ...] = ()  # in any of them (OR)
    in_trash: bool = False
    processing_state: str | None = None  # the pipeline's state (cardvault.domain.models.pipeline)
    url: str | None = None  # cards whose url has this one's normal form (cardvault.domain.urls)


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A listing's filters with q's qualifiers merged into them where the list has a
    parameter of its own (the first tag: and type:, before: and after:), so that they take
    the same fast paths; ``query`` keeps the rest. The list's own tags past the first are
    held as tag: qualifiers (every one holds), its types as one condition (any holds)."""

    sort: str  # relevance | newest | oldest
    archived: str
    tag_key: str | None
    card_types: tuple[str, ...]
    created_after: int | None  # exclusive bounds
    created_before: int | None
    query: Query


def resolve(filters: CardFilter) -> Resolved:
    """The filters and q as one listing (q's qualifiers and the list's parameters all hold)."""
    query = parse(filters.q or "")
    sort = filters.sort or "relevance"
    if sort == "relevance" and not query.has_words:
        sort = "newest"
    cleaned = [clean_tag(name) for name in filters.tags]
    tag = tag_key(cleaned[0]) if cleaned else None
    card_types, after, before = filters.card_types, filters.created_after, filters.created_before
    archived = filters.archived or "exclude"
    kept = [Qualifier("tag", name) for name in cleaned[1:]]
    for qualifier in query.qualifiers:
        name, value, negated = qualifier.name, qualifier.value, qualifier.negated
        if name == "after":  # inclusive; the list's bound is exclusive
            after = int(value) - 1 if after is None else max(after, int(value) - 1)
        elif name == "before":
            before = int(value) if before is None else min(before, int(value))
        elif name == "tag" and not negated and tag is None and _is_tag(str(value)):
            tag = tag_key(clean_tag(str(value)))
        elif name == "type" and not negated and not card_types:
            card_types = (str(value),)
        else:
            if (name, value, negated) == ("is", "archived", False) and filters.archived is None:
                archived = "include"  # is:archived lifts the default of leaving them out
            kept.append(qualifier)
    rest = dataclasses.replace(query, qualifiers=tuple(kept))
    return Resolved(sort, archived, tag, card_types, after, before, rest)


def _is_tag(value: str) -> bool:
    try:
        clean_tag(value)
    except InvalidTag:
        return False
    return True
