"""The one representation of a card (its list item, the Card and the ExtendedCard schemas), shared
by the card operations, the Trash and the card page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from cardvault.domain import links
from cardvault.domain.cards import captions, colors
from cardvault.domain.cards.extended import ExtendedView
from cardvault.domain.cards.ranking import Explanation
from cardvault.domain.cards.reading import CardView
from cardvault.domain.files import filetypes
from cardvault.domain.models import Card
from cardvault.domain.pipeline import status
from cardvault.domain.pipeline.status import StageView
from cardvault.domain.search.planning import Plan
from cardvault.handlers.http import runtime

FILE_URL_SECONDS = 3600  # how long a file URL in a response works


def _app_url(card: Card | CardView) -> str:
    return f"{runtime.current().settings.public_url}/cards/{card.id}"


def file_url(key: str | None, file_name: str | None, mime_type: str | None) -> str | None:
    """A short-lived signed URL of a stored file; anything a browser could run in our origin
    (HTML, SVG, XML, scripts) is sent as an attachment."""
    if key is None:
        return None
    mime_type = mime_type or "application/octet-stream"
    return runtime.current().store.download_url(
        key,
        file_name=file_name or "file",
        content_type=mime_type,
        attachment=filetypes.served_as_attachment(mime_type),
        expires_in=FILE_URL_SECONDS,
    )


def _rendition_url(key: str | None, name: str) -> str | None:
    return file_url(key, name, "image/webp")


# FilePreview's fields, each always present (null where the kind of file has none).
_PREVIEW_FIELDS = (
    "kind",
    "excerpt",
    "pageCount",
    "animated",
    "lineCount",
    "wordCount",
    "slideCount",
    "sheetCount",
    "entryCount",
    "fileCount",
    "directoryCount",
    "uncompressedBytes",
)


def _file_preview_json(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if stored is None else {field: stored.get(field) for field in _PREVIEW_FIELDS}


def _base_json(card: Card | CardView) -> dict[str, Any]:
    """The fields every card representation carries."""
    # A link without an image of its own stands by its screenshot's renditions.
    compact_key = card.compact_object or card.screenshot_compact_object
    compact = _rendition_url(compact_key, "compact.webp")
    large = _rendition_url(card.thumbnail_object, "image.webp")
    screenshot = _rendition_url(card.screenshot_object, "screenshot.webp")
    # A video's poster and a PDF's first page stand for the card at their large size.
    shown = large if card.type in ("video", "document") and large else compact
    return {
        "id": card.id,
        "type": card.type,
        "createdAt": card.created_at,
        "updatedAt": card.updated_at,
        "appUrl": _app_url(card),
        "aiTags": card.ai_tags,
        "tags": card.tags,
        "isFavorited": card.is_favorited,
        "annotationCount": card.annotation_count,
        "folderIds": card.folder_ids,
        "url": card.url,
        "fileName": card.file_name,
        "fileSize": card.file_size,
        "mimeType": card.mime_type,
        "fileUrl": file_url(card.file_object, card.file_name, card.mime_type),
        "fileKind": card.file_kind,
        "fileExtension": card.file_extension,
        "fileLanguage": card.file_language,
        "compactUrl": compact,
        "placeholderUrl": _rendition_url(
            card.placeholder_object or card.screenshot_placeholder_object, "placeholder.webp"
        ),
        "thumbnailUrl": shown,
        "detailUrl": large or (screenshot if card.type == "link" else None),
        "screenshotUrl": screenshot,
        "linkPreviewImageUrl": large if card.type == "link" else None,
    }


def card_json(card: Card | CardView) -> dict[str, Any]:
    """The Card schema."""
    return {
        **_base_json(card),
        "content": card.content,
        "notes": card.notes,
        "aiSummary": card.ai_summary,
        "metadataTitle": card.metadata_title,
        "metadataDescription": card.metadata_description,
        "filePreview": _file_preview_json(card.file_preview),
    }


def stages_for_list(
    session: Session, listed: Sequence[CardView], include: set[str]
) -> dict[int, list[StageView]]:
    """The listed cards' processing stages, when ``include`` asks for ``processing``."""
    return status.stages_of(session, [c.pk for c in listed]) if "processing" in include else {}


def list_item_json(
    card: Card | CardView, include: set[str], stages: Sequence[StageView] | None = None
) -> dict[str, Any]:
    """A card as an item of a list (also used by the Trash list); ``stages`` with
    ``processing``."""
    item = _base_json(card)
    large = item.pop("linkPreviewImageUrl")
    if "content" in include:
        item.update(content=card.content, notes=card.notes, aiSummary=card.ai_summary)
    if "metadata" in include:
        item.update(
            metadataTitle=card.metadata_title,
            metadataDescription=card.metadata_description,
            linkPreviewImageUrl=large,
            filePreview=_file_preview_json(card.file_preview),
        )
    if "processing" in include:
        item["processingStatus"] = status.status_json(stages or [])
    return item


def extended(session: Session, card: Card) -> dict[str, Any]:
    """The ExtendedCard schema, with the card's processing stages read in the same session."""
    return _extended_card_json(card, card, status.stages_of(session, [card.pk]).get(card.pk, []))


def extended_many(cards: Sequence[ExtendedView]) -> dict[int, dict[str, Any]]:
    """The ExtendedCard schema of each card (read with its stages), by pk."""
    return {view.card.pk: _extended_card_json(view.card, view, view.stages) for view in cards}


def _extended_card_json(
    card: Card | CardView, more: Card | ExtendedView, stages: Sequence[StageView]
) -> dict[str, Any]:
    """The ExtendedCard schema of a card (its card view, and ``more``: the columns only this
    schema shows; a Card is both)."""
    return {
        **card_json(card),
        "aiTranscript": card.ai_transcript,
        "isDeleted": card.deleted_at is not None,
        "isArchived": card.archived_at is not None,
        "archivedAt": card.archived_at,
        "metadataStatus": status.metadata_status(stages),
        "processingStatus": status.status_json(stages, more.ocr_facts),
        "fileText": card.file_text,
        **links.link_json(card.link_meta),
        "fileWidth": card.file_width,
        "fileHeight": card.file_height,
        "fileDuration": None if more.duration_ms is None else more.duration_ms / 1000,
        "audioWaveform": more.waveform,
        "videoScrub": None
        if more.scrub is None
        else {**more.scrub, "url": _rendition_url(more.scrub_object, "scrub.webp")},
        "aiTranscriptSource": more.transcript_source,
        "captionsFile": _captions_json(more),
        "colors": colors.palette(card.content) if card.type == "palette" else colors.named(more.colors or []),
        "aiEngine": more.ai_engine,
        "thumbnailOverridden": card.thumbnail_overridden,
        **_capture_json(card.id, more),
    }


# A capture's stored outputs: its column, its file name's end, its type and its facts' key.
_CAPTURED = {
    "linkArchive": ("archive_object", "mhtml", "multipart/related", "archive"),
    "linkReader": ("reader_object", "md", "text/markdown; charset=utf-8", "reader"),
}


def _capture_json(card_id: str, more: Card | ExtendedView) -> dict[str, Any]:
    """The extended card's capture fields: the archive and the reader view (null while none)."""
    facts = more.capture or {}
    fields: dict[str, Any] = {"linkCapturedAt": facts.get("capturedAt")}
    for field, (column, extension, content_type, name) in _CAPTURED.items():
        key = getattr(more, column)
        fields[field] = (
            None
            if key is None
            else {
                "url": file_url(key, f"{card_id}.{extension}", content_type),
                "contentType": content_type,
                "capturedAt": facts.get("capturedAt"),
                **facts.get(name, {}),
            }
        )
    return fields


def _captions_json(more: Card | ExtendedView) -> dict[str, Any] | None:
    if more.captions is None:
        return None
    name, caption_format = more.captions["fileName"], more.captions["format"]
    return {
        **more.captions,
        "url": file_url(more.captions_object, name, captions.CONTENT_TYPES[caption_format]),
    }


def done_card_json(session: Session, card: Card) -> dict[str, Any]:
    """The extended card with the fields only mark-done returns."""
    return {
        **extended(session, card),
        "completedAt": card.completed_at,
        "isHidden": False,
        **links.done_json(card.type, card.link_meta, card.metadata_title),
    }


def _bucket(explained: Explanation) -> str:
    if explained.every:
        return "everyTerm"
    return "someTerms" if any(term.held for term in explained.terms) else "relatedWords"


def explanation_json(plan: Plan | None, explained: Explanation | None) -> dict[str, Any] | None:
    """The SearchExplanation schema of a card in a search's order (None without words to find)."""
    if plan is None or explained is None:
        return None
    terms = [
        {
            "term": " OR ".join(" ".join(found.words) for found in term.texts if found.form == "typed"),
            "found": held.held,
            "where": ("headline" if held.headline else "body") if held.held else None,
            "asTyped": held.typed,
            "weight": round(term.weight, 4),
        }
        for term, held in zip(plan.terms, explained.terms, strict=True)
    ]
    return {
        "bucket": _bucket(explained),
        "tier": explained.tier,
        "score": round(explained.score, 4),
        "relatedScore": round(explained.related, 4),
        "terms": terms,
    }
