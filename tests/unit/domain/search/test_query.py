"""The search syntax of q: what each form means, the errors a client can avoid, and a parser
that never fails otherwise and stays linear."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.errors import InvalidQuery
from cardvault.domain.search.query import MAX_QUALIFIERS, MAX_WORDS, Qualifier, Query, Text, parse


def words(*values: str, prefix: bool = True) -> Text:
    return Text(tuple(values), prefix)


def test_words_are_folded_prefixes_and_all_must_hold() -> None:
    assert parse("Café  Noir") == Query(required=((words("cafe"),), (words("noir"),)))


def test_a_term_of_several_words_is_a_phrase_whose_last_word_is_a_beginning() -> None:
    assert parse("e-mail example.com/doc") == Query(
        required=((words("e", "mail"),), (words("example", "com", "doc"),))
    )


def test_a_quoted_phrase_is_exact_and_an_open_quote_runs_to_the_end() -> None:
    assert parse('"Postgres  vacuum" x "open end') == Query(
        required=(
            (words("postgres", "vacuum", prefix=False),),
            (words("x"),),
            (words("open", "end", prefix=False),),
        )
    )


def test_a_minus_excludes_a_word_or_a_phrase_and_alone_is_nothing() -> None:
    assert parse('a -b -"c d" - -') == Query(
        required=((words("a"),),), excluded=(words("b"), words("c", "d", prefix=False))
    )


def test_or_joins_the_terms_beside_it_before_and() -> None:
    assert parse('a b OR "c d" OR e f') == Query(
        required=((words("a"),), (words("b"), words("c", "d", prefix=False), words("e")), (words("f"),))
    )


@pytest.mark.parametrize("q", ["OR a", "a OR", "a OR -b", "a OR tag:x", "a or b"])
def test_or_without_a_term_on_each_side_is_left_out_and_lowercase_or_is_a_word(q: str) -> None:
    found = parse(q)
    assert all(len(group) == 1 for group in found.required)
    assert (words("or"),) in found.required if "or b" in q else (words("or"),) not in found.required


def test_qualifiers_are_read_with_their_values_and_negations() -> None:
    found = parse(
        'tag:"To Read" -tag:done TYPE:Link folder:Inbox site:https://Blog.Example.com/x is:favorite -has:file'
    )
    assert found.qualifiers == (
        Qualifier("tag", "To Read"),
        Qualifier("tag", "done", negated=True),
        Qualifier("type", "link"),
        Qualifier("folder", "Inbox"),
        Qualifier("site", "blog.example.com"),
        Qualifier("is", "favorite"),
        Qualifier("has", "file", negated=True),
    )
    assert found.required == ()


def test_dates_are_utc_days_or_epoch_milliseconds_and_negation_swaps_the_bound() -> None:
    assert parse("after:2025-03-01 before:1740873600000 -after:2025-01-01 -before:1970-01-02").qualifiers == (
        Qualifier("after", 1_740_787_200_000),
        Qualifier("before", 1_740_873_600_000),
        Qualifier("before", 1_735_689_600_000),
        Qualifier("after", 86_400_000),
    )


@pytest.mark.parametrize(
    ("q", "as_words"),
    [("note:milk", ("note", "milk")), ("tag:", ("tag",)), ('tag:"" x', ("tag",)), ("is:", ("is",))],
)
def test_an_unknown_name_or_an_empty_value_is_searched_as_words(q: str, as_words: tuple[str, ...]) -> None:
    found = parse(q)
    assert found.qualifiers == ()
    assert found.required[0] == (Text(as_words, True),)


@pytest.mark.parametrize(
    ("q", "position"),
    [
        ("type:banana", 0),
        ("a   is:read", 4),
        ("x -has:everything", 2),
        ("before:soon", 0),
        ("after:2025-02-30", 0),
        ("after:1969-12-31", 0),
        ("before:99999999999999999", 0),
        ("site:exa%20mple", 0),
        ("b site:http://", 2),
    ],
)
def test_a_value_that_names_nothing_is_refused_with_its_position(q: str, position: int) -> None:
    with pytest.raises(InvalidQuery) as refused:
        parse(q)
    assert refused.value.details is not None and refused.value.details["position"] == position


def test_a_seventeenth_qualifier_is_refused_and_words_past_the_forty_eighth_are_left_out() -> None:
    with pytest.raises(InvalidQuery):
        parse(" ".join(["is:done"] * (MAX_QUALIFIERS + 1)))
    found = parse(" ".join(f"w{i}" for i in range(60)))
    assert len(found.required) == MAX_WORDS == 48
    left_out = parse(" ".join(f"-x{i}" for i in range(60)) + " kept")
    assert len(left_out.excluded) == 48 and left_out.required == ((Text(("kept",), True),),)
    words, long_phrase = " ".join(f"w{i}" for i in range(45)), " ".join(f"p{i}" for i in range(20))
    phrase = parse(f'{words} "{long_phrase}" later')
    assert phrase.required[-1] == (Text(("p0", "p1", "p2"), False),)


def test_repeated_terms_count_once() -> None:
    assert parse("a a OR a b b") == Query(required=((words("a"),), (words("b"),)))


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list('ab -:"OR tag:is:site:before:after:\u0301é\x00\n')), max_size=256)
)
def test_any_string_parses_or_is_refused_with_a_position(q: str) -> None:
    try:
        found = parse(q)
    except InvalidQuery as refused:
        assert refused.details is not None and 0 <= refused.details["position"] < len(q)
        return
    assert sum(len(text.words) for group in found.required for text in group) <= 32


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=1024))
def test_any_unicode_string_parses_or_is_refused(q: str) -> None:
    with contextlib.suppress(InvalidQuery):
        parse(q)


MAX_Q = 1024  # the spec's maxLength of q
STOP = ["the", "of", "how", "do", "i", "a", "in", "what", "is", "to", "and", "not"]
VALID_QUALIFIERS = [
    "tag:work",
    "type:link",
    "-type:image",
    "is:favorite",
    "-is:archived",
    "has:notes",
    "folder:none",
    "site:example.com",
    "before:2030-01-01",
    "-after:1600000000000",
    'tag:"two words"',
]


def _filled(tokens: list[str]) -> str:
    """The tokens joined while they fit q's maxLength."""
    q = ""
    for token in tokens:
        if len(q) + len(token) + 1 > MAX_Q:
            break
        q = f"{q} {token}" if q else token
    return q


def queries(words: list[str]) -> st.SearchStrategy[str]:
    """Random q up to the spec's 1,024 characters: the given words (each also misspelt or cut
    to a beginning), stop words, phrases of them (one left open), OR, negations, valid
    qualifiers (none past the 16th) and stray punctuation, mixed."""
    word = st.sampled_from(words)
    term = st.one_of(
        word,
        word.map(lambda w: w[:2] + "q" + w[3:]),  # a typo
        word.map(lambda w: w[: max(1, len(w) // 2)]),  # a beginning
        st.sampled_from(STOP),
        st.lists(st.one_of(word, st.sampled_from(STOP)), min_size=1, max_size=4).map(
            lambda ws: '"' + " ".join(ws) + '"'
        ),
        st.sampled_from(["OR", "-", '"', "--", "OR OR", "%", "e-mail", "x.y", "\u0301", "é"]),
    )
    token = st.one_of(
        term,
        term.map(lambda t: "-" + t),
        st.sampled_from(VALID_QUALIFIERS),
        st.tuples(term, term).map(lambda pair: f"{pair[0]} OR {pair[1]}"),
    )
    # As many tokens as q may hold as often as a few (a list left to itself stays short).
    tokens = st.one_of(st.lists(token, max_size=20), st.lists(token, min_size=150, max_size=260))
    return tokens.map(lambda found: _filled(_qualifiers_capped(found)))


def _qualifiers_capped(tokens: list[str]) -> list[str]:
    kept, qualifiers = [], 0
    for token in tokens:
        if token in VALID_QUALIFIERS:
            qualifiers += 1
            if qualifiers > MAX_QUALIFIERS:
                continue
        kept.append(token)
    return kept


@settings(max_examples=300, deadline=None)
@given(queries(["alpha", "garden", "kubernetes", "taxes", "autovacuum", "sourdough", "x1"]))
def test_a_random_q_up_to_its_maxlength_parses_within_the_word_caps(q: str) -> None:
    assert len(q) <= MAX_Q
    found = parse(q)
    assert sum(len(text.words) for group in found.required for text in group) <= MAX_WORDS
    assert sum(len(text.words) for text in found.excluded) <= MAX_WORDS
    assert len(found.qualifiers) <= MAX_QUALIFIERS


@pytest.mark.parametrize(
    "unit", ['"', "-", "a:", "tag:", "OR ", "\u0301", '-"', "a-", 'tag:"', "is:done ", "x" * 50 + " "]
)
def test_a_megabyte_of_the_worst_repeats_parses_in_linear_time(unit: str) -> None:
    """The spec cuts q at 1,024 characters; far beyond it the parser stays linear. A megabyte
    parses in about a tenth of a second: a parser quadratic in its input would take hours,
    so the bound here is far above any machine's noise."""
    q = unit * (1_048_576 // len(unit))
    started = time.process_time()
    with contextlib.suppress(InvalidQuery):
        parse(q)
    assert time.process_time() - started < 20
