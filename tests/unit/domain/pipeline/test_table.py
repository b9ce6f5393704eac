"""The table of stages: the stages each card kind runs, in order, as its docstring lists them;
what waits for what, seen from both ends; and the names, kinds, codes and bounds it shares
with the interface; and that a stage waits only for one that runs before it, for the same kind
of card. (That every row has its module and actor is tests/unit/workers/test_pipeline.py's.)"""

from __future__ import annotations

import pytest

from cardvault.domain.models import Card
from cardvault.domain.pipeline import table as pipeline
from cardvault.spec import spec_document

SCHEMAS = spec_document()[1]["components"]["schemas"]
CARD_TYPES = SCHEMAS["CardType"]["enum"]


@pytest.mark.parametrize(
    ("kind", "stages"),
    [
        ("text", ("ai",)),
        ("quote", ("ai",)),
        ("link", ("linkMetadata", "linkPreview", "capture", "ocr", "ai")),
        ("image", ("renditions", "ocr", "ai")),
        ("audio", ("media", "transcript", "ai")),
        ("video", ("media", "transcript", "ai")),
        ("document", ("media", "ocr", "ai")),
        ("palette", ()),
        ("no such kind", ()),
    ],
)
def test_each_kind_runs_the_stages_the_docstring_lists_in_order(kind: str, stages: tuple[str, ...]) -> None:
    assert pipeline.stages_of_kind(kind) == stages


def test_the_stages_are_the_interfaces_in_the_interfaces_order() -> None:
    assert list(pipeline.ORDER) == SCHEMAS["ProcessingStageName"]["enum"]
    assert set(pipeline.BY_NAME) == set(pipeline.ORDER) and len(pipeline.ORDER) == len(pipeline.STAGES)


def test_every_kind_a_stage_runs_for_is_a_card_type() -> None:
    assert {kind for row in pipeline.STAGES for kind in row.kinds} <= set(CARD_TYPES)


@pytest.mark.parametrize("kind", CARD_TYPES)
def test_what_a_stage_waits_for_and_what_follows_it_agree(kind: str) -> None:
    for stage in pipeline.ORDER:
        for later in pipeline.ORDER:
            waits = pipeline.waits_for(kind, later) == stage
            assert waits == (later in pipeline.followers(kind, stage)), (kind, stage, later)


def test_waiting_differs_by_kind() -> None:
    assert pipeline.waits_for("link", "ai") == "capture"
    assert pipeline.waits_for("link", "capture") == "linkMetadata"
    assert pipeline.waits_for("video", "ai") == "transcript"
    assert pipeline.waits_for("document", "ai") == "ocr"
    assert pipeline.waits_for("document", "ocr") == "media"
    assert pipeline.waits_for("image", "ocr") == "renditions"
    assert pipeline.waits_for("link", "ocr") == "capture"  # its screenshot
    assert pipeline.waits_for("text", "ai") is None
    assert pipeline.waits_for("link", "retiredStage") is None
    assert pipeline.followers("audio", "media") == ("transcript",)
    assert pipeline.followers("link", "linkMetadata") == ("linkPreview", "capture")
    assert pipeline.followers("link", "capture") == ("ocr", "ai")  # the screenshot's words, beside


def test_a_stage_skipped_after_a_failure_says_so_with_a_code_the_interface_describes() -> None:
    described = SCHEMAS["ProcessingStatus"]["description"]
    skipped = described[described.index("Skipped stages' codes") :]
    for row in pipeline.STAGES:
        if row.skipped_after_failure is not None:
            assert row.after, f"{row.name} waits for nothing"
            assert f"`{row.skipped_after_failure}`" in skipped


def test_running_anyway_is_decided_by_a_field_of_the_card() -> None:
    for row in pipeline.STAGES:
        if row.runs_anyway_with is not None:
            assert row.runs_anyway_with in Card.__table__.c


@pytest.mark.parametrize(
    ("name", "module", "actor"),
    [("linkMetadata", "link_metadata", "link_metadata_stage"), ("ai", "ai", "ai_stage")],
)
def test_a_stage_names_its_module_and_actor_in_snake_case(name: str, module: str, actor: str) -> None:
    row = pipeline.BY_NAME[name]
    assert (row.module, row.actor_name) == (module, actor)


def test_an_attempt_may_wait_for_the_decoder_within_its_time_limit() -> None:
    for row in pipeline.STAGES:
        assert row.seconds > pipeline.DECODER_WAIT
    transcript = pipeline.BY_NAME["transcript"]
    assert transcript.seconds > pipeline.STAGE_SECONDS + pipeline.SPEECH_WAIT
    assert transcript.queue == "transcripts"


def test_the_queues_are_named_once_each_in_the_tables_order() -> None:
    assert pipeline.queues() == ("files", "captures", "transcripts", "ocr", pipeline.IMPORTED_QUEUE)


def test_the_table_names_every_stage_it_waits_for_and_runs_them_in_order() -> None:
    for row in pipeline.STAGES:
        for kind, before in row.after.items():
            assert kind in row.kinds
            assert pipeline.ORDER.index(before) < pipeline.ORDER.index(row.name)
            assert kind in pipeline.BY_NAME[before].kinds
