"""A card's tag rows: making its tags of one kind (the user's, the AI's) exactly some names."""

from __future__ import annotations

from collections.abc import Sequence

from cardvault.domain.models import Card, CardTag
from cardvault.domain.names import tag_key
from cardvault.domain.search.index import tag_words


def replace_tags(card: Card, kind: str, names: Sequence[str]) -> None:
    """Make the card's tags of one kind exactly these names, in this order."""
    wanted = {tag_key(name): (position, name) for position, name in enumerate(names)}
    for row in list(card.tag_rows):
        if row.kind != kind:
            continue
        if row.name_key in wanted:
            row.position, row.name = wanted.pop(row.name_key)
            row.words = tag_words(row.name)
        else:
            card.tag_rows.remove(row)
    for key, (position, name) in wanted.items():
        card.tag_rows.append(
            CardTag(
                kind=kind,
                name_key=key,
                name=name,
                position=position,
                account_id=card.account_id,
                words=tag_words(name),
                card_created_at=card.created_at,
            )
        )
