"""Ids: a type prefix and 128 random bits, in the spec's Id form; and the check that a string is
worth looking up."""

from __future__ import annotations

import re

import pytest

from cardvault.domain.ids import is_well_formed, new_id
from cardvault.spec import spec_document

ID_SCHEMA = spec_document()[1]["components"]["schemas"]["Id"]


def test_an_id_is_its_prefix_and_26_lowercase_base32_characters() -> None:
    assert re.fullmatch(r"crd_[a-z2-7]{26}", new_id("crd"))


@pytest.mark.parametrize("prefix", ["crd", "key", "exp", "fld", "req", "op"])
def test_every_id_fits_the_spec_id_schema(prefix: str) -> None:
    made = new_id(prefix)
    assert re.fullmatch(ID_SCHEMA["pattern"], made)
    assert ID_SCHEMA["minLength"] <= len(made) <= ID_SCHEMA["maxLength"]
    assert is_well_formed(made)


def test_ids_do_not_repeat() -> None:
    made = {new_id("crd") for _ in range(10_000)}
    assert len(made) == 10_000


def test_the_random_part_uses_every_character_of_its_alphabet() -> None:
    # 128 random bits: over many ids every base32 character shows up, at every place but the last
    # (whose low bits are padding).
    made = [new_id("crd")[4:] for _ in range(2_000)]
    for place in range(25):
        assert {m[place] for m in made} == set("abcdefghijklmnopqrstuvwxyz234567")


@pytest.mark.parametrize("candidate", ["crd_abc", "A-Z_09", "x", "a" * 64])
def test_these_have_the_form_of_an_id(candidate: str) -> None:
    assert is_well_formed(candidate)


@pytest.mark.parametrize(
    "candidate", ["", "a" * 65, "crd abc", "crd/abc", "crd.abc", "crd_é", "crd_abc\n", "%41", "crd_\x00"]
)
def test_these_are_not_worth_looking_up(candidate: str) -> None:
    assert not is_well_formed(candidate)
