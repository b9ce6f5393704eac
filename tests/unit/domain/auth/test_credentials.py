"""Secrets handed to clients: a prefix naming the kind, 30 random base62 characters and a
checksum, so a mistyped, made-up or other kind's value is refused without a database."""

from __future__ import annotations

import hashlib
import re

import pytest

from cardvault.domain.auth import credentials

KINDS = [
    credentials.API_KEY,
    credentials.ACCESS_TOKEN,
    credentials.REFRESH_TOKEN,
    credentials.AUTHORIZATION_CODE,
    credentials.SESSION,
    credentials.CLIENT_SECRET,
]


@pytest.mark.parametrize("prefix", KINDS)
def test_a_secret_is_its_prefix_and_base62_and_is_well_formed(prefix: str) -> None:
    secret = credentials.new_secret(prefix)
    assert len(secret) == credentials.LENGTH == 40
    assert re.fullmatch(re.escape(prefix) + "[0-9A-Za-z]{36}", secret)
    assert credentials.is_well_formed(secret, prefix)


def test_the_kinds_have_distinct_prefixes() -> None:
    assert len(set(KINDS)) == len(KINDS)


def test_secrets_do_not_repeat() -> None:
    assert len({credentials.new_secret(credentials.API_KEY) for _ in range(5_000)}) == 5_000


def test_a_secret_of_another_kind_is_refused() -> None:
    token = credentials.new_secret(credentials.ACCESS_TOKEN)
    assert not credentials.is_well_formed(token, credentials.API_KEY)
    # Nor does it pass with its prefix swapped: the checksum covers the prefix.
    assert not credentials.is_well_formed(credentials.API_KEY + token[4:], credentials.API_KEY)


def test_every_single_character_changed_is_refused() -> None:
    key = credentials.new_secret(credentials.API_KEY)
    for index in range(4, len(key)):
        altered = key[:index] + ("a" if key[index] != "a" else "b") + key[index + 1 :]
        assert not credentials.is_well_formed(altered, credentials.API_KEY), altered


@pytest.mark.parametrize(
    "value",
    [
        "",
        "cvk_",
        "cvk_" + "a" * 35,
        "cvk_" + "a" * 37,
        "cvk_" + "a" * 35 + "!",
        " cvk_" + "a" * 36,
        "CVK_" + "a" * 36,
    ],
)
def test_a_value_of_the_wrong_shape_is_refused(value: str) -> None:
    assert not credentials.is_well_formed(value, credentials.API_KEY)


def test_a_secret_is_stored_as_its_sha256() -> None:
    secret = credentials.new_secret(credentials.SESSION)
    assert credentials.digest(secret) == hashlib.sha256(secret.encode()).hexdigest()


@pytest.mark.parametrize(
    ("text", "scopes"),
    [
        ("keys read", ["read", "keys"]),
        ("write write  read", ["read", "write"]),
        ("admin read openid", ["read"]),
        ("", []),
        (credentials.ALL_SCOPES, ["read", "write", "keys"]),
    ],
)
def test_scopes_come_in_their_canonical_order_without_unknown_ones(text: str, scopes: list[str]) -> None:
    assert credentials.scope_list(text) == scopes
