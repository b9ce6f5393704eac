"""The If-Match and If-None-Match fields parsed (RFC 9110 §8.8.3 and §13.1), and how a request
carrying a bad one is answered: over the bounds 400 naming the header; malformed, a field that
names no version (If-Match fails, If-None-Match misses); never a 500."""

from __future__ import annotations

import pytest

from cardvault.domain.versions import Condition
from cardvault.handlers.http import conditional
from cardvault.handlers.http.errors import InvalidRequest
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error
from tests.unit.handlers.test_cards_conditional import settled_card


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("*", Condition(any=True)),
        ("  *\t", Condition(any=True)),
        ('"3"', Condition(tags=((False, '"3"'),))),
        ('W/"3"', Condition(tags=((True, '"3"'),))),
        ('"1", W/"2" ,"3"', Condition(tags=((False, '"1"'), (True, '"2"'), (False, '"3"')))),
        (', ,"1",,', Condition(tags=((False, '"1"'),))),  # empty list elements are allowed
        ('""', Condition(tags=((False, '""'),))),
        ('"a!#~\x80\xff"', Condition(tags=((False, '"a!#~\x80\xff"'),))),
    ],
)
def test_parses_star_and_lists_of_entity_tags(value: str, parsed: Condition) -> None:
    assert conditional.parse(value) == parsed


# Not the grammar: no quotes, an open quote, a lower-case weak prefix, no comma between tags,
# a space or DEL inside, "*" in a list, nothing but commas, a character past Latin-1.
MALFORMED = (
    "",
    " ",
    "3",
    '"3',
    "W/3",
    'w/"3"',
    '"3" "4"',
    '"3";"4"',
    '"a b"',
    '"a"b"',
    '*, "3"',
    '"\x7f"',
    ",",
    '"é\u0100"',
)


@pytest.mark.parametrize("value", MALFORMED)
def test_what_is_not_the_grammar_names_no_version(value: str) -> None:
    parsed = conditional.parse(value, "If-None-Match")
    assert parsed == conditional.NOTHING
    assert not parsed.matches_strongly('"1"') and not parsed.matches_weakly('"1"')


def test_bounds_the_entries_and_the_bytes() -> None:
    assert len(conditional.parse(", ".join(f'"{n}"' for n in range(conditional.MAX_TAGS))).tags) == 32
    with pytest.raises(InvalidRequest, match="at most 32 entity tags"):
        conditional.parse(", ".join(f'"{n}"' for n in range(conditional.MAX_TAGS + 1)))
    with pytest.raises(InvalidRequest, match="at most 2048 bytes"):
        conditional.parse('"' + "a" * conditional.MAX_FIELD_BYTES + '"')


def test_strong_comparison_for_if_match_and_weak_for_if_none_match() -> None:
    weak, strong = conditional.parse('W/"3"'), conditional.parse('"2", "3"')
    assert not weak.matches_strongly('"3"') and weak.matches_weakly('"3"')
    assert strong.matches_strongly('"3"') and strong.matches_weakly('"3"')
    assert not strong.matches_strongly('"4"') and not strong.matches_weakly('"4"')
    assert Condition(any=True).matches_strongly('"9"') and Condition(any=True).matches_weakly('"9"')


@pytest.mark.parametrize("value", ['"1"' * 1000, ", ".join(['"1"'] * 100), '"' + "x" * 5000 + '"'])
def test_a_field_over_its_bounds_is_400_and_changes_nothing(api: Api, value: str) -> None:
    card = api.create(content="kept", tags=["a"])
    path = f"/v1/cards/{card['id']}"
    body = assert_error(
        api.patch(path, json={"tags": ["b"]}, headers={"If-Match": value}), 400, "INVALID_INPUT"
    )
    assert value not in body["error"]
    assert_error(api.get(path, headers={"If-None-Match": value}), 400, "INVALID_INPUT")
    assert api.get(path).json()["tags"] == ["a"]


@pytest.mark.parametrize("value", ["garbage", "17", 'W/"', "\t,\t", '"1" "2"', '*, "1"'])
def test_a_malformed_field_fails_if_match_and_misses_if_none_match(api: Api, value: str) -> None:
    card, etag = settled_card(api, content="kept", tags=["a"])
    path = f"/v1/cards/{card['id']}"
    refused = assert_error(
        api.patch(path, json={"tags": ["b"]}, headers={"If-Match": value}), 412, "PRECONDITION_FAILED"
    )
    assert refused["details"] == {"etag": etag}
    read = api.get(path, headers={"If-None-Match": value})
    assert (read.status_code, read.json()["tags"], read.headers["etag"]) == (200, ["a"], etag)


def test_every_line_of_a_repeated_field_counts(api: Api) -> None:
    card, etag = settled_card(api, content="two lines")
    path = f"/v1/cards/{card['id']}"
    lines = [
        ("authorization", api.headers["Authorization"]),
        ("if-none-match", '"0"'),
        ("if-none-match", etag),
    ]
    assert api.client.get(path, headers=lines).status_code == 304
