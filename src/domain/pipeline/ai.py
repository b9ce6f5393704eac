"""The ``ai`` stage's rules: what text of a card is described, how the engine's keywords become
the card's AI tags, and how the result is kept (a summary, tags and the language of the card's
text, by the offline engine or the configured provider: cardvault.adapters.ai).

The text: a text or quote card's content; a link's title, description and page text; a
document's name, text and the words read in its scanned pages; an image's name and the words
read in it; an audio or video card's name and transcript (none without a text or
transcript: a file's name alone says too little). Keywords are snapped
onto the account's existing tags where they mean the same: the same words ignoring case, with
spaces, hyphens, underscores or nothing between them, and the last word singular or plural
(``Machine-Learning`` for ``machine learning``, ``recipes`` for ``recipe``); the tag keeps the
account's spelling. A keyword that is one of the card's own tags is left out. The user's tags
are never changed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.adapters.ai import Described
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidTag
from cardvault.domain.models import Card, TagCounter, TagSpelling
from cardvault.domain.names import tag_key
from cardvault.domain.search.index import index_card
from cardvault.domain.tags import counts
from cardvault.domain.tags.names import clean_tag
from cardvault.domain.tags.rows import replace_tags

BASIS = ("content", "url", "file_object", "ai_transcript", "file_text", "metadata_title")
# The words read in a picture (file_text) are described, and so are part of the result's basis,
# only on the cards whose ai follows ocr: an image's and a document's. A link's ai runs beside its
# ocr (both follow capture: the screenshot's words are not needed to describe the page), reads no
# file_text, and must keep its result when its ocr records first (even an empty text).
READS_FILE_TEXT = ("image", "document")
WRITES_TAGS = True
PROMPT_TAGS = 200  # of the account's tags, the most used ones shown to a provider


def basis(card_type: str) -> tuple[str, ...]:
    """The card fields the stage's result for a card of this type derives from."""
    if card_type in READS_FILE_TEXT:
        return BASIS
    return tuple(field for field in BASIS if field != "file_text")


def text_of(card: Card, source_text: str | None) -> str:
    """The card's text the AI stage describes (``source_text``: its page's or document's)."""
    if card.type in ("text", "quote"):
        parts: Iterable[str | None] = (card.content,)
    elif card.type == "link":
        parts = (card.metadata_title, card.metadata_description, source_text)
    elif card.type in ("audio", "video"):  # a name alone (IMG_2024...) says nothing
        parts = (card.file_name, card.ai_transcript) if (card.ai_transcript or "").strip() else ()
    elif card.type == "image":  # the words read in it (an image without any says nothing here)
        parts = (card.file_name, card.file_text) if (card.file_text or "").strip() else ()
    else:  # a document: its text, and the words read in its scanned pages
        texts = "\n\n".join(t for t in (source_text, card.file_text) if t and t.strip())
        parts = (card.file_name, texts) if texts else ()
    return "\n\n".join(part.strip() for part in parts if part and part.strip())


def source_text(session: Session, card_pk: int) -> str | None:
    """The text of the card's page or document (kept apart from the card's other columns)."""
    return session.scalar(select(Card.source_text).where(Card.pk == card_pk))


def account_tags(session: Session, account_id: str, limit: int = PROMPT_TAGS) -> list[str]:
    """The account's most used tags (their most used spelling), for a provider's prompt."""
    keys = session.scalars(
        select(TagCounter.name_key)
        .where(TagCounter.account_id == account_id)
        .order_by(TagCounter.cards.desc(), TagCounter.name_key)
        .limit(limit)
    ).all()
    spellings = _spellings(session, account_id, keys)
    return [spellings[key] for key in keys if key in spellings]


def variants(tag: str) -> list[str]:
    """The tag keys that mean the same as ``tag`` (see the module's docstring), its own first."""
    words = tag_key(tag).replace("-", " ").replace("_", " ").split()
    if not words:
        return []
    *head, last = words
    forms = {last, last + "s", last + "es"}
    if last.endswith("ies"):
        forms.add(last[:-3] + "y")
    if last.endswith("y"):
        forms.add(last[:-1] + "ies")
    if last.endswith("es"):
        forms.add(last[:-2])
    if last.endswith("s") and len(last) > 3:
        forms.add(last[:-1])
    found = [tag_key(tag)]  # the tag's own key first
    for form in sorted(forms):
        for joint in (" ", "-", "_", ""):
            key = joint.join([*head, form])
            if key not in found:
                found.append(key)
    return found


def snap(session: Session, card: Card, keywords: Sequence[str]) -> list[str]:
    """The keywords as the card's AI tags: each snapped onto an existing tag of the account
    that means the same, the card's own tags left out, each tag once."""
    wanted = {
        keyword: variants(keyword) for keyword in keywords if _is_tag(keyword)
    }  # (a provider may say anything)
    existing = set(
        session.scalars(
            select(TagCounter.name_key).where(
                TagCounter.account_id == card.account_id,
                TagCounter.name_key.in_({key for keys in wanted.values() for key in keys}),
            )
        )
    )
    spellings = _spellings(session, card.account_id, existing)
    own = {tag_key(name) for name in card.tags}
    chosen: dict[str, str] = {}
    for keyword, keys in wanted.items():
        match = next((key for key in keys if key in existing), None)
        name = spellings.get(match, keyword) if match else keyword
        key = tag_key(name)
        if key not in own and key not in chosen:
            chosen[key] = name
    return list(chosen.values())


def _is_tag(name: str) -> bool:
    try:
        return clean_tag(name) == name
    except InvalidTag:
        return False


def _spellings(session: Session, account_id: str, keys: Iterable[str]) -> dict[str, str]:
    """Each tag key's most used spelling."""
    keys = list(keys)
    if not keys:
        return {}
    rows = session.execute(
        select(TagSpelling.name_key, TagSpelling.name)
        .where(TagSpelling.account_id == account_id, TagSpelling.name_key.in_(keys))
        .order_by(TagSpelling.name_key, TagSpelling.uses.desc(), TagSpelling.name)
    )
    found: dict[str, str] = {}
    for key, name in rows:
        found.setdefault(key, name)
    return found


def skipped_by(card: Card) -> str | None:
    """Nothing in the card refuses the result."""
    return None


def apply(session: Session, card: Card, fields: dict[str, object]) -> None:
    """Set the card's summary and its tags from what the engine said (``described``)."""
    described = fields["described"]
    assert isinstance(described, Described)
    keep(
        session,
        card,
        summary=described.summary,
        keywords=described.tags,
        engine={"kind": described.kind, "model": described.model, "language": described.language},
    )


def keep(
    session: Session,
    card: Card,
    *,
    summary: str | None,
    keywords: Sequence[str],
    engine: dict[str, Any],
) -> None:
    """Keep what the engine said on the card (locked, the account's tags locked before it):
    its summary, its keywords as AI tags, and which engine said it."""
    before = counts.card_tally(card)
    replace_tags(card, "ai", snap(session, card, keywords))
    card.ai_summary, card.ai_engine = summary, engine
    card.updated_at = max(now_ms(), card.updated_at)
    session.flush()
    index_card(session, card)
    counts.apply(session, account_id=card.account_id, before=before, after=counts.card_tally(card))
