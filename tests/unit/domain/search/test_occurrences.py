"""Where a query's texts start in a run of words, found in one pass with its comparisons counted."""

from __future__ import annotations

import random

import pytest

from cardvault.domain.search.occurrences import Allowance, Finder
from cardvault.domain.search.query import Text


def starts(texts: list[Text], words: list[str]) -> tuple[dict[int, int], int]:
    """Each start with the bit of the first text found there, and the comparisons it took."""
    reader, allowance = Finder(texts).reader(), Allowance(10**9)
    for word in words:
        reader.feed(word, allowance)
    return reader.starts, allowance.spent


def one_by_one(texts: list[Text], words: list[str]) -> dict[int, int]:
    """The same, the slow way: every text compared word by word at every position."""
    unique = list(dict.fromkeys(texts))
    found = {}
    for at in range(len(words)):
        for bit, text in enumerate(unique):
            here = words[at : at + len(text.words)]
            if len(here) == len(text.words) and all(
                word == wanted or (text.prefix and last and word.startswith(wanted))
                for word, wanted, last in zip(
                    here, text.words, [i == len(here) - 1 for i in range(len(here))], strict=True
                )
            ):
                found[at] = bit
                break
    return found


def test_random_texts_start_where_comparing_them_one_by_one_says() -> None:
    chance = random.Random(42)  # fixed: the same cases every run
    vocabulary = ["a", "ab", "abc", "b", "ba", "c"]
    for _ in range(500):
        words = chance.choices(vocabulary, k=chance.randint(0, 30))
        texts = [
            Text(tuple(chance.choices(vocabulary, k=chance.randint(1, 4))), chance.random() < 0.5)
            for _ in range(chance.randint(1, 5))
        ]
        assert starts(texts, words)[0] == one_by_one(texts, words), (texts, words)


def test_overlapping_occurrences_of_a_phrase_each_start() -> None:
    assert starts([Text(("a", "a"), False)], ["a", "a", "a", "b"])[0] == {0: 0, 1: 0}


def test_the_earlier_text_wins_where_two_start_and_a_repeated_text_counts_once() -> None:
    texts = [Text(("quick", "brown"), False), Text(("quick",), True), Text(("quick", "brown"), False)]
    assert Finder(texts).texts == texts[:2]
    assert starts(texts, ["quickly", "quick", "brown"])[0] == {0: 1, 1: 0}


def test_a_words_beyond_the_hundredth_character_are_not_compared() -> None:
    long = "x" * 100
    assert starts([Text((long,), False)], [long + "yz"])[0] == {0: 0}


@pytest.mark.parametrize("length", [1, 2, 8, 15, 16])
def test_a_phrase_costs_one_comparison_a_word_however_long_it_is(length: int) -> None:
    words = ["a"] * 32_760 + ["b"]
    phrase = Text(("a",) * (length - 1) + ("b",), False)
    found, spent = starts([phrase], words)
    assert found == {len(words) - length: 0}
    assert spent == len(words) + 1  # each word once, and the one occurrence


def test_sixteen_words_to_find_cost_no_more_than_one_comparison_a_word_and_their_lengths() -> None:
    texts = [Text(("w" * n,), True) for n in range(1, 17)]  # every prefix of a long word
    words = [f"w{i}" for i in range(10_000)]  # no word repeats: each classified once
    found, spent = starts(texts, words)
    assert set(found.values()) == {0}
    assert spent == len(words) * (1 + 2) + len(found)  # a lookup, "w" begins it, "ww" does not; a match


def test_an_allowance_counts_what_was_spent() -> None:
    allowance = Allowance(10)
    reader = Finder([Text(("a",), False)]).reader()
    for word in ["a", "b", "a"]:
        reader.feed(word, allowance)
    assert (allowance.spent, allowance.left) == (5, 5)  # three words, two occurrences
