"""Tag rules, and their agreement with the TagName pattern of the spec."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.errors import InvalidTag
from cardvault.domain.tags.names import clean_tag, clean_tags
from cardvault.spec import spec_document

TAG_SCHEMA = spec_document()[1]["components"]["schemas"]["TagName"]
TAG_PATTERN = re.compile(TAG_SCHEMA["pattern"])


def test_trims_surrounding_whitespace() -> None:
    assert clean_tag("\t Work \n") == "Work"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 65, "longer than 64"),
        ("a\x00b", "control"),
        ("a\u0085b", "control"),
    ],
)
def test_refuses_a_bad_tag_naming_it(raw: str, reason: str) -> None:
    with pytest.raises(InvalidTag) as caught:
        clean_tag(raw)
    assert reason in caught.value.message
    assert caught.value.details == {"tag": raw}


def test_sixty_four_characters_after_trimming_is_allowed() -> None:
    assert clean_tag("  " + "é" * 64 + "  ") == "é" * 64


def test_duplicates_ignoring_case_keep_the_first_spelling() -> None:
    assert clean_tags(["Work", "work", "WORK", "Straße", "STRASSE", "x"]) == ["Work", "Straße", "x"]


@settings(max_examples=400)
@given(st.text(max_size=80))
def test_the_spec_pattern_accepts_exactly_the_tags_the_domain_accepts(raw: str) -> None:
    try:
        clean_tag(raw)
        valid = True
    except InvalidTag:
        valid = False
    assert (TAG_PATTERN.fullmatch(raw) is not None and 1 <= len(raw) <= TAG_SCHEMA["maxLength"]) == valid


@pytest.mark.parametrize("raw", ["\u200b", "\ufeffwork", "work\u200e", " \u2060 "])
def test_refuses_a_tag_that_begins_or_ends_invisibly(raw: str) -> None:
    with pytest.raises(InvalidTag):
        clean_tag(raw)


def test_a_joiner_inside_a_tag_is_kept() -> None:
    assert clean_tag("👩\u200d💻") == "👩\u200d💻"


def _accepted(raw: str) -> tuple[bool, bool]:
    try:
        clean_tag(raw)
        by_domain = True
    except InvalidTag:
        by_domain = False
    return by_domain, TAG_PATTERN.fullmatch(raw) is not None


def test_the_spec_pattern_and_the_domain_agree_on_every_character_at_every_place() -> None:
    disagreements = []
    # Every BMP character (where the rules name characters), and a sample of the other planes.
    for code in [*range(0xD800), *range(0xE000, 0x10000), *range(0x10000, 0x110000, 97)]:
        c = chr(code)
        for raw in (c, f"a{c}", f"{c}a", f"a{c}a"):
            by_domain, by_spec = _accepted(raw)
            if by_domain != by_spec:
                disagreements.append((hex(code), raw, by_domain, by_spec))
    assert disagreements == []
