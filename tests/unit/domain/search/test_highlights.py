"""Fragments of a field around the words of a query, marked by offsets."""

from __future__ import annotations

from cardvault.domain.search.highlights import (
    CARD_COMPARISONS,
    MAX_FRAGMENTS,
    PAGE_COMPARISONS,
    SCANNED,
    WIDTH,
    Budget,
    fragments,
    highlights,
)
from cardvault.domain.search.query import Text, parse


def marked(fragment: dict) -> list[str]:  # type: ignore[type-arg]
    return [fragment["text"][m["start"] : m["end"]] for m in fragment["matches"]]


def test_a_short_field_is_one_fragment_with_every_occurrence() -> None:
    (whole,) = fragments("Café au lait, CAFÉ noir", [Text(("cafe",), True)])
    assert whole["text"] == "Café au lait, CAFÉ noir" and whole["offset"] == 0
    assert marked(whole) == ["Café", "CAFÉ"]


def test_offsets_count_code_points_through_combining_marks_and_astral_characters() -> None:
    value = "😀 cafe\u0301 then 😀 cafe"
    (whole,) = fragments(value, [Text(("cafe",), True)])
    assert marked(whole) == ["cafe\u0301", "cafe"]
    assert whole["matches"][0] == {"start": 2, "end": 7}


def test_a_phrase_is_marked_whole_and_only_side_by_side() -> None:
    (whole,) = fragments("quick brown, brown quick, quick-brown", [Text(("quick", "brown"), False)])
    assert marked(whole) == ["quick brown", "quick-brown"]


def test_a_long_field_gives_at_most_three_fragments_cut_between_words() -> None:
    filler = " ".join(["lorem"] * 200)
    value = f"{filler} needle {filler} needle {filler} needle {filler} needle {filler}"
    found = fragments(value, [Text(("needle",), True)])
    assert len(found) == MAX_FRAGMENTS
    for fragment in found:
        assert marked(fragment) == ["needle"]
        assert len(fragment["text"]) <= WIDTH
        assert value[fragment["offset"] : fragment["offset"] + len(fragment["text"])] == fragment["text"]
        assert fragment["text"].startswith("lorem") and fragment["text"].endswith("lorem")


def test_occurrences_past_the_scanned_length_are_not_read() -> None:
    value = "x " * (SCANNED // 2) + "needle"
    assert fragments(value, [Text(("needle",), True)]) == []


def test_every_field_is_listed_and_excluded_words_are_not_marked() -> None:
    found = highlights({"title": "Tea and cake", "content": None}, parse("cake -tea"))
    assert set(found) == {"title", "content", "notes", "transcript", "fileText"}
    assert marked(found["title"][0]) == ["cake"] and found["content"] == []
    assert highlights({"title": "Tea"}, parse("tag:tea"))["title"] == []


def test_a_word_longer_than_the_index_keeps_is_marked_by_its_first_hundred_characters() -> None:
    long = "x" * 150
    (whole,) = fragments(f"the {long} word", parse(f'"{long}"').required[0])
    assert marked(whole) == [long]


def test_a_page_reads_no_more_than_its_budget() -> None:
    budget = Budget(100)
    first = highlights({"content": "cake " * 10, "notes": "cake " * 10}, parse("cake"), budget)
    assert first["content"] and first["notes"]  # 50 + 50 characters: within the budget
    assert highlights({"content": "cake"}, parse("cake"), budget)["content"] == []


WORST = "a " * 32_760 + "b"  # a field of one-letter words, a phrase of sixteen ending at its last
PHRASE = parse('"' + "a " * 15 + 'b"')


def test_the_worst_field_is_read_whole_at_one_comparison_a_word() -> None:
    budget = Budget()
    found = highlights({"content": WORST}, PHRASE, budget)
    (fragment,) = found["content"]
    assert marked(fragment) == ["a " * 15 + "b"] and fragment["text"].endswith("a b")
    assert budget.comparisons.spent == 32_761 + 1 <= CARD_COMPARISONS  # each word, and the occurrence


def test_a_page_of_the_worst_cards_stops_at_its_comparisons() -> None:
    budget, shown = Budget(characters=10**9), []
    for _ in range(100):
        shown.append(bool(highlights({"content": WORST, "notes": WORST}, PHRASE, budget)["content"]))
    assert budget.comparisons.spent <= PAGE_COMPARISONS
    cards = PAGE_COMPARISONS // CARD_COMPARISONS
    assert shown == [True] * cards + [False] * (100 - cards)


def test_a_card_spends_at_most_its_share_and_keeps_what_it_found() -> None:
    budget = Budget(characters=10**9)
    fields = {"title": "cake " + "x " * 32_000, "content": "x " * 1_000 + "cake", "notes": "cake"}
    found = highlights(fields, parse("cake"), budget)
    assert [marked(fragment) for fragment in found["title"]] == [["cake"]]  # read to its end
    assert found["content"] == found["notes"] == []  # past the card's share
    assert budget.comparisons.spent <= CARD_COMPARISONS
    assert highlights({"content": "x " * 1_000 + "cake"}, parse("cake"), budget)["content"]  # the next card's
