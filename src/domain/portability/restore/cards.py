"""Restoring an export archive's cards and folders into an account (the archive is opened and
checked by cardvault.domain.portability.restore.checks).

A card is restored with new ids and the same content, tags, AI fields, folders, flags,
annotations and times; each file is taken like any upload (its type judged by its bytes, its kind's size
limit). What the pipeline makes from the file (renditions, posters) is made again by the
workers, and a stage whose result the archive holds is recorded as completed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain import changes
from cardvault.domain.annotations import records as annotation_records
from cardvault.domain.cards import editing, trash
from cardvault.domain.clock import now_ms
from cardvault.domain.db import lock_tags
from cardvault.domain.errors import FolderExists, InvalidInput
from cardvault.domain.files import uploads
from cardvault.domain.folders import MAX_FOLDERS_PER_CARD, PALETTE, create_folder
from cardvault.domain.models import Card, CardStage, Folder, FolderCard
from cardvault.domain.names import tag_key
from cardvault.domain.pipeline import processing
from cardvault.domain.pipeline.processing import Written
from cardvault.domain.portability.restore.checks import strings_of, text_of, whole_of
from cardvault.domain.search.index import index_card
from cardvault.domain.tags import counts
from cardvault.domain.tags.names import clean_tags
from cardvault.domain.tags.rows import replace_tags

# What each stage writes, by the record fields that show it ran (the rest run again).
_RESTORED_BY = {
    "linkMetadata": ("linkMetadata",),
    "capture": ("screenshot",),  # restored by captures.restore_capture, before finish_card
    "transcript": ("aiTranscript",),
    "ocr": ("fileTextRead",),  # (an empty fileText is a result too: the picture had no words)
    "ai": ("aiSummary", "aiTags", "aiEngine"),
}


def restore_folders(
    session: Session, *, account_id: str, records: Sequence[dict[str, Any]]
) -> dict[str, str]:
    """Create the archive's folders (a folder of the same name is used as it is); return the
    archive's folder ids mapped to the account's."""
    mapped: dict[str, str] = {}
    for record in records:
        name, color = record.get("name"), record.get("color")
        if (
            not isinstance(name, str)
            or not name.strip()
            or len(name) > 300
            or not isinstance(record.get("id"), str)
        ):
            raise InvalidInput("folders.json has a folder without an id or a name of 1 to 300 characters.")
        color = color if color in PALETTE else None
        try:
            with session.begin_nested():
                folder = create_folder(session, account_id=account_id, name=name, color=color)
        except FolderExists:
            key = tag_key(name.strip())
            found = session.scalar(
                select(Folder).where(Folder.account_id == account_id, Folder.name_key == key)
            )
            if found is None:
                raise
            folder = found
        mapped[record["id"]] = folder.id
    return mapped


def add_card(
    session: Session,
    *,
    account_id: str,
    record: Mapping[str, Any],
    file: uploads.TakenFile | None,
    content: str | None,
    folder_ids: Mapping[str, str],
    max_cards: int | None = None,
) -> Card:
    """Create the card with its content, user tags, file, flags and folders (its AI fields,
    archive and Trash come with ``finish_card``, after a caption file is attached);
    CardLimitReached when the account holds ``max_cards`` already."""
    card = editing.add_card(
        session,
        account_id=account_id,
        card_type=text_of(record, "type"),
        content=content,
        notes=text_of(record, "notes"),
        tags=strings_of(record, "tags"),
        url=text_of(record, "url"),
        source=text_of(record, "source"),
        file=file,
        created_at=whole_of(record, "createdAt"),
        max_cards=max_cards,
    ).card
    card.is_favorited = record.get("isFavorited") is True
    card.completed_at = whole_of(record, "completedAt")
    for position, old_id in enumerate(strings_of(record, "folderIds")[:MAX_FOLDERS_PER_CARD]):
        folder_id = folder_ids.get(old_id)
        if folder_id is not None and all(row.folder_id != folder_id for row in card.folder_rows):
            changes.note(session, account_id=account_id, kind="folder", ids=[folder_id])  # its cardCount
            card.folder_rows.append(
                FolderCard(
                    folder_id=folder_id,
                    card_pk=card.pk,
                    added_at=card.created_at + position,
                    card_created_at=card.created_at,
                )
            )
    return card


def finish_card(session: Session, *, account_id: str, card_id: str, record: Mapping[str, Any]) -> Written:
    """Restore what the pipeline wrote, the archive and Trash, and the card's times; return it
    with the stages to send to the workers once this commits (queued here: a lost send is the
    sweeper's)."""
    lock_tags(session, account_id=account_id)
    card = editing.get_card(session, account_id=account_id, card_id=card_id, for_update=True)
    before = counts.card_tally(card)
    card.metadata_title, card.metadata_description = (
        text_of(record, "metadataTitle"),
        text_of(record, "metadataDescription"),
    )
    card.ai_summary, card.ai_transcript = text_of(record, "aiSummary"), text_of(record, "aiTranscript")
    card.transcript_source = text_of(record, "aiTranscriptSource")
    card.file_text, card.ocr_facts = record.get("fileText"), record.get("fileTextRead")  # (checked together)
    for field, column in (
        ("linkMetadata", "link_meta"),
        ("aiEngine", "ai_engine"),
        ("filePreview", "file_preview"),
    ):
        value = record.get(field)
        setattr(card, column, value if isinstance(value, dict) else None)
    for field, column in (
        ("fileWidth", "file_width"),
        ("fileHeight", "file_height"),
        ("fileDurationMs", "duration_ms"),
    ):
        setattr(card, column, whole_of(record, field))
    waveform = record.get("audioWaveform")
    card.waveform = waveform if isinstance(waveform, dict) else None
    colors = record.get("colors")
    card.colors = colors if isinstance(colors, list) and all(isinstance(c, str) for c in colors) else None
    replace_tags(card, "ai", clean_tags(strings_of(record, "aiTags")))
    session.flush()
    index_card(session, card)
    counts.apply(session, account_id=account_id, before=before, after=counts.card_tally(card))
    restored = {stage for stage, fields in _RESTORED_BY.items() if any(record.get(f) for f in fields)}
    wanted = processing.stages_for(card)
    _completed(session, card, [s for s in wanted if s in restored])
    queued = processing.queue(session, card, [s for s in wanted if s not in restored], imported=True)
    found = record.get("annotations")
    annotation_records.restore_archived(session, card, found if isinstance(found, list) else [])
    card.archived_at = whole_of(record, "archivedAt")
    if whole_of(record, "deletedAt") is not None:
        trash.move_to_trash(session, account_id=account_id, card_id=card_id)
        card.deleted_at = whole_of(record, "deletedAt")
    card.updated_at = whole_of(record, "updatedAt") or now_ms()
    return Written(card, queued, imported=True)


def _completed(session: Session, card: Card, names: Sequence[str]) -> None:
    now = now_ms()
    for name in names:
        row = session.get(CardStage, (card.pk, name)) or CardStage(card_pk=card.pk, stage=name, attempts=0)
        row.state, row.error_code, row.lease = "completed", None, None
        row.started_at = row.completed_at = row.updated_at = now
        session.add(row)


def discard_card(session: Session, *, account_id: str, card_id: str) -> None:
    """Delete a card an import made but could not finish (its objects go with it)."""
    trash.move_to_trash(session, account_id=account_id, card_id=card_id)
    trash.delete_forever(session, account_id=account_id, card_id=card_id)
