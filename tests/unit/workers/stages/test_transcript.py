"""The ``transcript`` stage run by its actor: a caption file serves when the file cannot be read
or there is none; a transcript that finds speech recognition busy gives its thread back without
spending an attempt; the sweeper leaves a long transcript alone while it may still be running."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import update

from cardvault.bootstrap import bootstrap
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.models import Card, CardStage
from cardvault.domain.pipeline import processing
from cardvault.settings import Settings
from cardvault.workers import broker
from cardvault.workers import pipeline as worker
from harness.media_files import FOX
from tests.conftest import app_env
from tests.speech_extra import require_speech
from tests.unit.workers.stages.test_ai import read, stage


def bind(tmp_path: Path, database: Database, **env: str) -> Settings:
    settings = Settings.from_env({**app_env(tmp_path, database), **env})
    bootstrap(settings, database=database)
    broker.broker.flush_all()
    return settings


def audio_card(
    db: Database,
    account_id: str,
    data: bytes | None,
    *,
    captions: str | None = None,
    media: str = "completed",
) -> int:
    """An audio card holding ``data`` as its file (none: a card saved before files were
    required), its ``media`` stage in that state and its ``transcript`` stage pending."""
    key = None
    if data is not None:
        key = f"accounts/{account_id}/files/test/sound.ogg"
        broker.services_of(broker.broker).blobs.put(key, data, content_type="audio/ogg")
    with db.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="", card_type="text").card
        session.flush()
        session.execute(
            update(Card)
            .where(Card.pk == card.pk)
            .values(
                type="audio",
                file_object=key,
                file_kind="audio" if key else None,
                mime_type="audio/ogg" if key else None,
                captions_object=f"accounts/{account_id}/captions/x/upl_x" if captions else None,
                captions_text=captions,
            )
        )
        now = now_ms()
        session.add(CardStage(card_pk=card.pk, stage="media", state=media, attempts=1, updated_at=now))
        session.add(
            CardStage(card_pk=card.pk, stage="transcript", state="pending", attempts=0, updated_at=now)
        )
        return card.pk


def test_a_caption_file_serves_when_the_file_cannot_be_read(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    bind(tmp_path, database)
    broken = audio_card(database, account_id, b"OggS" + bytes(200), captions="Hello there.")
    worker.ACTORS["transcript"](broken)
    assert stage(database, broken, "transcript") == ("completed", 1, None)
    assert (read(database, broken).ai_transcript, read(database, broken).transcript_source) == (
        "Hello there.",
        "captions",
    )
    after_failed_media = audio_card(database, account_id, b"OggS", captions="Hi.", media="failed")
    worker.ACTORS["transcript"](after_failed_media)
    assert read(database, after_failed_media).transcript_source == "captions"
    without = audio_card(database, account_id, b"OggS", media="failed")
    worker.ACTORS["transcript"](without)
    assert stage(database, without, "transcript") == ("skipped", 0, "NO_MEDIA")


def test_a_card_without_a_file_uses_its_caption_file_or_is_skipped(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    bind(tmp_path, database)
    legacy = audio_card(database, account_id, None, captions="Old words.")
    worker.ACTORS["transcript"](legacy)
    assert read(database, legacy).ai_transcript == "Old words."
    bare = audio_card(database, account_id, None)
    worker.ACTORS["transcript"](bare)
    assert stage(database, bare, "transcript") == ("skipped", 1, "NO_MEDIA")


def test_a_transcript_finding_speech_recognition_busy_gives_its_thread_back_uncounted(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    require_speech()
    bind(tmp_path, database, CARDVAULT_SPEECH="true")
    pk = audio_card(database, account_id, FOX.read_bytes())
    assert broker.services_of(broker.broker).speech._lock.acquire(
        timeout=60
    )  # another file is being transcribed
    try:
        worker.ACTORS["transcript"](pk)  # waits SPEECH_WAIT, then returns
    finally:
        broker.services_of(broker.broker).speech._lock.release()
    assert stage(database, pk, "transcript") == ("pending", 0, "DECODE_BUSY")
    delayed = broker.broker.queues["transcripts.DQ"]  # type: ignore[attr-defined]
    assert delayed.qsize() == 1  # sent again SPEECH_BUSY_DELAY_MS later
    worker.ACTORS["transcript"](pk)
    assert stage(database, pk, "transcript") == ("completed", 1, None)
    assert "quick brown fox" in (read(database, pk).ai_transcript or "").lower()


def test_a_message_for_the_files_queue_passes_a_transcript_on_to_its_own_actor(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    bind(tmp_path, database)
    pk = audio_card(database, account_id, None)
    worker.run_stage(pk, "transcript")  # as an older release sent it
    assert stage(database, pk, "transcript") == ("pending", 0, None)
    assert broker.broker.queues["transcripts"].qsize() == 1  # type: ignore[attr-defined]


def test_the_sweeper_sends_again_only_stages_with_no_sign_of_life_for_the_stale_time(
    database: Database, account_id: str
) -> None:
    # A running stage's worker beats for it, however long the stage may run (a transcript up
    # to 19 minutes): one with no sign of life for the stale time is a dead worker's.
    now = now_ms()
    minute = 60_000
    with database.transaction() as session:
        made = []
        for _ in range(4):
            card = editing.add_card(session, account_id=account_id, content="x", card_type="text").card
            session.flush()
            made.append(card.pk)
        rows = [
            (made[0], "transcript", "running", now - 10_000),  # its worker beat moments ago
            (made[1], "transcript", "running", now - 2 * minute),  # its worker died
            (made[2], "linkMetadata", "running", now - 2 * minute),  # its worker died
            (made[3], "linkMetadata", "running", now - 10_000),
            (made[0], "ai", "pending", now - 2 * minute),  # its message was lost
            (made[1], "ai", "pending", now - 10_000),  # sent moments ago
        ]
        for pk, name, state, updated in rows:
            session.add(CardStage(card_pk=pk, stage=name, state=state, attempts=1, updated_at=updated))
    with database.transaction(write=False) as session:
        found = processing.unsettled(session, older_than=now - minute)
    ours = sorted((row.card_pk, row.stage) for row in found if row.card_pk in made)  # and other tests' cards
    assert ours == sorted([(made[1], "transcript"), (made[2], "linkMetadata"), (made[0], "ai")])
