"""The processing pipeline's table of stages: for each stage, the card kinds it runs for, the
stage it waits for (by card kind), the code it is skipped with when that one did not complete,
its queue, its time limit and its retries. The table's order is the order stages run (and show
in ``processingStatus``). Everything else reads it: the bookkeeping (processing, beside it),
the recorder and its actors (cardvault.workers.pipeline), the sweeper and the worker command.

Stages of cards an import made run behind the others, and take turns per host (IMPORTED_QUEUE).

Stages by card kind, as the table says:
- ``text`` and ``quote``: ``ai`` (summary, tags and language of the text);
- ``link`` with a URL: ``linkMetadata`` (its page), then ``linkPreview`` (the page's image) and
  ``capture`` (the page drawn by a browser: screenshot, archive, reader view), then ``ai`` (of
  the page's text: the reader view's where the capture made one);
- ``image`` with a file: ``renditions`` (and the main colours), then ``ocr`` (the words in it),
  then ``ai`` (of the words read);
- ``audio`` and ``video`` with a file: ``media`` (duration, waveform, poster, scrub strip), then
  ``transcript``, then ``ai`` (of the transcript);
- ``document`` with a file: ``media`` (preview, facts and text), then ``ocr`` (a PDF's pages
  without a text layer), then ``ai``;
- a ``link``'s ``ocr`` follows its ``capture`` (the screenshot, read when the page gave no text).

Adding a stage = one row in STAGES + its rules beside it + how it is run:
1. add a ``Stage`` row here, where it runs in the order (its name is the spec's
   ``ProcessingStageName``; add the name to the spec's enum, and a migration that queues it for
   existing cards if they should run it);
2. add its rules, ``src/domain/pipeline/<module>.py`` (``Stage.module``: the name in snake
   case), with ``BASIS``, ``WRITES_TAGS``, ``skipped_by(card)`` and ``apply(session, card,
   fields)`` (cardvault.domain.pipeline.rules.StageRules says what each is), and name it in
   ``rules.RULES``;
3. add how it is run, ``src/workers/stages/<module>.py`` with ``run(card, lease)``, and name it
   in cardvault.workers.pipeline.RUNNERS;
its actor, named ``Stage.actor_name``, is declared from the row by cardvault.workers.pipeline, and
tests/unit/workers/test_pipeline.py fails while any part is missing."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from cardvault.adapters.decoder import SPEECH_TIMEOUT_SECONDS

# A stage waits at most DECODER_WAIT for the decoder (then DECODE_BUSY, retried), well inside
# its time limit: Dramatiq's limit must never interrupt a thread holding or taking the lock.
DECODER_WAIT = 30.0
# Speech recognition has a child of its own (it keeps the model loaded): one file at a time per
# worker process. Another transcript waits at most SPEECH_WAIT for it (then it is sent again
# later: cardvault.workers.stages.transcript).
SPEECH_WAIT = 5.0
# A capture waits at most CAPTURE_WAIT for one of its process's browser slots (then it is sent
# again CAPTURE_RETRY_MS later: cardvault.workers.stages.capture).
CAPTURE_WAIT = 5.0
CAPTURE_RETRY_MS = 10_000
# OCR has children of its own (CARDVAULT_OCR_CONCURRENCY per worker process, on the ``ocr``
# queue); a file waits at most OCR_WAIT for a free one (then DECODE_BUSY, retried).
OCR_WAIT = 30.0

# A stage's attempt is bounded (a fetch 15 s, a page read to its first MiBs, a wait for the
# decoder 30 s and a decode 90 s, a file's download and its pictures' upload); Dramatiq stops
# one that runs longer. While an attempt runs, its worker beats for it; another worker takes
# over a running stage only once it has had no sign of life for CARDVAULT_STALE_SECONDS (its
# worker died). The transcript stage, which may wait for speech recognition and run it, has a
# queue and bounds of its own.
STAGE_SECONDS = 240
# Stages queued by an import (their rows say ``imported``) have actors of their own on one
# queue, IMPORTED_QUEUE, of a lower priority: a worker runs a stage of a card saved by hand
# before any imported one it holds, and 30,000 imported stages waiting never stand in front of
# it. An imported stage that fetches from the card's host (``Stage.paced``) takes the host's
# next turn, at most one every HOST_TURN_MS across the workers, and waits for it (HOST_PACED).
IMPORTED_QUEUE = "imported"
IMPORTED_PRIORITY = 100  # Dramatiq runs lower numbers first; the stages saved by hand have 0
HOST_TURN_MS = 1_000
# A pending imported stage may wait behind its import's backlog for long: the sweeper sends it
# again (its message lost) only after this long without a sign of life, not the stale time.
IMPORTED_STALE_MS = 6 * 3600 * 1000
TRANSCRIPT_SECONDS = STAGE_SECONDS + int(SPEECH_WAIT + SPEECH_TIMEOUT_SECONDS)
MAX_ATTEMPTS = 5  # a stage failing for a passing reason fails for good on its fifth attempt
# A stage whose file found the disk full waits for room, its attempt not counted and sent again
# later (CARDVAULT_FULL_DISK_RETRY_SECONDS), while its card is younger than FULL_DISK_WAIT_MS;
# past that its attempts count (a file that never fits must not be decoded again forever).
FULL_DISK_WAIT_MS = 24 * 3600 * 1000


@dataclasses.dataclass(frozen=True)
class Stage:
    """One row of the table."""

    name: str  # as the interface names it (ProcessingStageName)
    kinds: tuple[str, ...]  # the card kinds it runs for
    after: Mapping[str, str] = dataclasses.field(default_factory=dict)  # by kind: the stage it waits for
    skipped_after_failure: str | None = None  # its code when the stage it waits for did not complete
    # A card field that, when set, lets it run though the stage it waits for did not complete.
    runs_anyway_with: str | None = None
    queue: str = "files"
    seconds: int = STAGE_SECONDS  # Dramatiq's time limit of one attempt
    retries: int = MAX_ATTEMPTS  # Dramatiq's retries of an attempt that failed for a passing reason
    paced: bool = False  # it fetches from the card's host: an imported card's takes the host's turn

    @property
    def module(self) -> str:
        """Its module's name in cardvault.workers.stages: the name in snake case."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).lower()

    @property
    def actor_name(self) -> str:
        """Its Dramatiq actor's name."""
        return f"{self.module}_stage"


_MEDIA = ("audio", "video")
STAGES = (
    Stage("linkMetadata", kinds=("link",), paced=True),
    Stage(
        "linkPreview",
        kinds=("link",),
        after={"link": "linkMetadata"},
        skipped_after_failure="NO_PAGE",
        paced=True,
    ),
    Stage(
        "capture",
        kinds=("link",),
        after={"link": "linkMetadata"},
        skipped_after_failure="NO_PAGE",
        queue="captures",
        paced=True,
    ),
    Stage("renditions", kinds=("image",)),
    Stage("media", kinds=(*_MEDIA, "document")),
    Stage(
        "transcript",
        kinds=_MEDIA,
        after=dict.fromkeys(_MEDIA, "media"),
        skipped_after_failure="NO_MEDIA",
        runs_anyway_with="captions_object",  # a caption file needs nothing the file's reading made
        queue="transcripts",
        seconds=TRANSCRIPT_SECONDS,
    ),
    Stage(
        "ocr",
        kinds=("image", "link", "document"),
        after={"image": "renditions", "link": "capture", "document": "media"},
        skipped_after_failure="NO_PICTURE",
        queue="ocr",
    ),
    Stage(
        "ai",
        kinds=("text", "quote", "link", "image", *_MEDIA, "document"),
        after={"link": "capture", "image": "ocr", **dict.fromkeys(_MEDIA, "transcript"), "document": "ocr"},
    ),
)
BY_NAME = {stage.name: stage for stage in STAGES}
ORDER = tuple(BY_NAME)


def stages_of_kind(kind: str) -> tuple[str, ...]:
    """The stages a card of this kind runs, in order (none for a kind the table does not name)."""
    return tuple(stage.name for stage in STAGES if kind in stage.kinds)


def waits_for(card_type: str, stage: str) -> str | None:
    """The stage this one waits for on a card of this type, if any."""
    row = BY_NAME.get(stage)
    return None if row is None else row.after.get(card_type)


def followers(card_type: str, stage: str) -> tuple[str, ...]:
    """The stages that wait for this one on a card of this type (sent when it settles)."""
    return tuple(row.name for row in STAGES if row.after.get(card_type) == stage)


def queues() -> tuple[str, ...]:
    """The queues the stages' actors use (IMPORTED_QUEUE last)."""
    return (*dict.fromkeys(stage.queue for stage in STAGES), IMPORTED_QUEUE)
