"""The ai stage's rules that need no engine: which text of a card is described, and which
account tags a keyword means the same as."""

from __future__ import annotations

import pytest

from cardvault.domain.models import Card
from cardvault.domain.pipeline import ai


@pytest.mark.parametrize(
    ("fields", "source", "text"),
    [
        ({"type": "text", "content": " Notes on bread. "}, None, "Notes on bread."),
        (
            {"type": "link", "content": "", "metadata_title": "Bread", "metadata_description": "How to"},
            "Flour and water.",
            "Bread\n\nHow to\n\nFlour and water.",
        ),
        (
            {"type": "video", "content": "", "file_name": "talk.mp4", "ai_transcript": "Hello."},
            None,
            "talk.mp4\n\nHello.",
        ),
        (
            {"type": "document", "content": "", "file_name": "notes.pdf"},
            "Page one.",
            "notes.pdf\n\nPage one.",
        ),
        ({"type": "audio", "content": "", "file_name": None}, None, ""),
        ({"type": "video", "content": "", "file_name": "IMG_2024.mp4", "ai_transcript": None}, None, ""),
        ({"type": "document", "content": "", "file_name": "Scan 12 Mar.pdf"}, "  ", ""),
    ],
    ids=["text", "link", "video", "document", "nothing", "a-name-alone", "a-name-and-no-text"],
)
def test_the_text_described_depends_on_the_card(
    fields: dict[str, str | None], source: str | None, text: str
) -> None:
    assert ai.text_of(Card(**fields), source) == text


def test_variants_cover_joints_and_the_last_words_number() -> None:
    found = ai.variants("Machine Learning")
    assert found[0] == "machine learning"
    assert {"machine-learning", "machine_learning", "machinelearning", "machine learnings"} <= set(found)
    assert {"recipe", "recipes"} <= set(ai.variants("recipes")) and "cherry" in ai.variants("cherries")
    assert ai.variants("  ") == []
