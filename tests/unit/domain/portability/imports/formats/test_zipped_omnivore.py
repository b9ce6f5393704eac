"""Omnivore's export ZIP (cardvault.domain.portability.imports.formats.zipped): its metadata files in the
order of their numbers, labels, state and times, and each item's highlights file: quotes,
their notes and notes on the article."""

from __future__ import annotations

import pytest

from cardvault.domain.portability.imports.formats import Highlight, zipped
from tests.unit.domain.portability.imports.formats.conftest import (
    FIXTURES,
    broken,
    measured,
    members_of,
    read_opened,
    taken,
    zipped_bytes,
)

OMNIVORE = FIXTURES / "omnivore"


def test_omnivore_items_take_labels_state_times_and_their_highlights_and_notes() -> None:
    items = read_opened(zipped.omnivore, zipped_bytes(members_of(OMNIVORE)), 777)
    found = taken(items)
    assert broken(items) == []
    assert [(e.title, e.tags, e.archived, e.created_at) for e in found] == [
        (
            "Why Building in AI Is Nothing Like Making Conventional Software",
            ["Newsletter", "ai"],
            False,
            1730217478808,
        ),
        (
            "Malgré la crise du marché des montres, Breitling étend son réseau commercial",
            ["RSS"],
            True,
            1730208769000,
        ),
        ("東京の古本屋めぐり：神保町ガイド", [], False, 1730016903114),
        ("Do You Really Want to Live Forever? – Centauri Dreams", [], False, 1729850877000),
    ]
    first, second, third, fourth = found
    assert first.excerpt == "Introducing Source Code, your backstage pass to Every Studio"
    assert first.highlights == [
        Highlight(  # a quote of two paragraphs, then its note
            "In traditional software, you write the rules.\n\nIn AI products, you shape the behavior.",
            "Good framing for the team offsite.",
        ),
        Highlight("Prototyping is cheap; evaluation is expensive."),
    ]
    assert second.highlights == [
        Highlight(
            "La marque suisse veut s’étendre ailleurs en Asie.", "Voir aussi l’article sur Swatch — à relire."
        )
    ]
    assert (third.highlights, third.notes) == ([], [])
    assert (fourth.highlights, fourth.notes) == (
        [],
        ["Article-level note: compare with Bostrom's fable of the dragon-tyrant."],
    )
    assert first.unmapped == ["author", "thumbnail", "readingProgress", "content", "highlight labels"]
    assert third.unmapped == ["content"]


def test_omnivore_metadata_files_are_read_in_the_order_of_their_numbers() -> None:
    def batch(title: str) -> bytes:
        return (
            f'[{{"slug": "s", "title": "{title}", "url": "https://{title}.example/", "labels": []}}]'.encode()
        )

    members = {"metadata_100_to_101.json": batch("third"), "metadata_0_to_20.json": batch("first")}
    members["metadata_20_to_40.json"] = batch("second")
    assert [e.title for e in taken(read_opened(zipped.omnivore, zipped_bytes(members)))] == [
        "first",
        "second",
        "third",
    ]


def test_an_item_of_millions_of_labels_fails_alone_in_bounded_memory() -> None:
    # The hostile review's ZIP: a few kilobytes whose metadata holds "labels": [{}, {}, ...]
    # (32 MiB of them here): built whole, about 2 GB.
    items, grown = measured(
        """
        import io, zipfile
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            with archive.open("metadata_0_to_3.json", "w") as member:
                member.write(b'[{"url": "https://example.com/a"}, ')
                member.write(b'{"url": "https://example.com/b", "labels": [')
                for _ in range(32):
                    member.write(b"{}," * (1024 * 1024 // 3))
                member.write(b'{}]}, {"url": "https://example.com/c", "labels": ["kept"]}]')
        data = out.getvalue()
        assert len(data) < 100_000
        items = list(zipped.omnivore(lambda: [data]))
        """
    )
    assert items == [
        ["Entry", "metadata_0_to_3.json, item 1", None],
        [
            "Broken",
            "metadata_0_to_3.json, item 2",
            "a list of it holds over 20,000 items, more than any export's entry: not taken",
        ],
        ["Entry", "metadata_0_to_3.json, item 3", None],
    ]
    assert grown < 48 * 1024 * 1024


@pytest.mark.parametrize("labels", ["5", '{"a": "b"}', "[1, [2], {}]"])
def test_wrong_typed_labels_are_left_out(labels: str) -> None:
    metadata = f'[{{"url": "https://example.com/a", "labels": {labels}, "slug": ["x"], "state": []}}]'
    items = read_opened(zipped.omnivore, zipped_bytes({"metadata_0_to_1.json": metadata.encode()}))
    assert [(e.url, e.tags, e.archived) for e in taken(items)] == [("https://example.com/a", [], False)]
