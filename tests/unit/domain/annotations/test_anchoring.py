"""Finding a quote: exactly, among repeats by its context and where it was, with other
whitespace, and nearly (RapidFuzz); None when the text does not hold it."""

from __future__ import annotations

from cardvault.domain.annotations.anchoring import FUZZY_WHOLE_TEXT, Anchor, Quoted, context, find, place_all

TEXT = "one two three. one two four. one two three."


def test_an_exact_quote_is_found_where_it_first_is() -> None:
    assert find(TEXT, "two three") == Anchor(4, 13)


def test_repeats_are_told_apart_by_prefix_suffix_and_where_it_was() -> None:
    last = TEXT.rindex("one two")
    assert find(TEXT, "one two", prefix="four. ") == Anchor(last, last + 7)
    assert find(TEXT, "one two", suffix=" four") == Anchor(15, 22)
    assert find(TEXT, "one two", near=last - 2) == Anchor(last, last + 7)


def test_whitespace_runs_stand_for_each_other() -> None:
    assert find("a  line\n\tbroken here", "line broken") == Anchor(3, 15)


def test_a_near_quote_is_found_and_a_foreign_one_is_not() -> None:
    text = "Autovacuum tuning for busy Postgres tables keeps bloat down."
    found = find(text, "autovacum tuning for busy")
    assert found is not None and text[found.start : found.end].lower().startswith("utovacuum tuning")
    assert find(text, "nothing like it at all here") is None
    assert find(text, "xyz") is None  # short quotes are only found exactly


def test_a_large_text_is_searched_nearly_only_around_where_the_quote_was() -> None:
    text = "filler words " * (FUZZY_WHOLE_TEXT // 13 + 1) + "the lighthouse keeper's daughter"
    at = text.index("lighthouse")
    assert find(text, "the lighthuose keeper's daughter") is None
    found = find(text, "the lighthuose keeper's daughter", near=at)
    assert found is not None and abs(found.start - (at - 4)) <= 2


def test_context_is_up_to_32_characters_each_side() -> None:
    text = "x" * 40 + "QUOTE" + "y" * 40
    assert context(text, Anchor(40, 45)) == ("x" * 32, "y" * 32)
    assert context("ab", Anchor(0, 1)) == ("", "b")


def test_quotes_placed_again_follow_the_edit_that_moved_them() -> None:
    """An edit before every quote moves them all by one amount: each is placed where that
    amount puts it, even a quote repeated with the very same context, which a search from
    where it was would take for its nearer twin."""
    block = "the same words, the same words, and again: " * 3
    before = "A heading line. " + block + "-" * 10 + block + "the end."
    second = before.index(block, 20) + block.index("and again")
    quoted = [
        Quoted("A heading", "", " line. the same", 0),
        Quoted("and again", before[second - 32 : second], before[second + 9 : second + 41], second),
    ]
    opening = "An opening paragraph of more than a hundred characters, written in front of every quote. " * 2
    after = opening + before
    heading, moved = place_all(after, quoted)
    assert heading == Anchor(len(opening), len(opening) + 9)
    assert moved == Anchor(second + len(opening), second + len(opening) + 9)
    # the same quote searched for from where it was lands on its twin, nearer that place
    searched = find(after, "and again", prefix=quoted[1].prefix, suffix=quoted[1].suffix, near=second)
    assert searched is not None and searched != moved
    assert place_all(after, [Quoted("nowhere in it", None, None, 3)]) == [None]
