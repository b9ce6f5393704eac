"""Account passwords: Argon2id hashes with the settings' cost, checked in the same time whether or
not there is a hash to check."""

from __future__ import annotations

import pytest

from cardvault.domain.auth.passwords import PasswordParams, Passwords

CHEAP = PasswordParams(time_cost=1, memory_kib=8192, parallelism=1)


@pytest.fixture(scope="module")
def passwords() -> Passwords:
    return Passwords(CHEAP)


def test_a_password_matches_its_hash_and_nothing_else(passwords: Passwords) -> None:
    stored = passwords.hash("correct horse battery staple")
    assert passwords.verify(stored, "correct horse battery staple")
    assert not passwords.verify(stored, "correct horse battery stapl")
    assert not passwords.verify(stored, "Correct horse battery staple")
    assert not passwords.verify(stored, "")


def test_the_hash_is_argon2id_with_the_cost_asked_and_a_salt_of_its_own(passwords: Passwords) -> None:
    first, second = passwords.hash("a passphrase here"), passwords.hash("a passphrase here")
    assert first.startswith("$argon2id$") and "m=8192,t=1,p=1" in first
    assert first != second and "a passphrase here" not in first
    assert passwords.verify(second, "a passphrase here")


def test_no_hash_answers_false(passwords: Passwords) -> None:
    assert not passwords.verify(None, "decoy password, never anyone's")
    assert not passwords.verify(None, "anything at all")


@pytest.mark.parametrize("stored", ["", "not a hash", "$argon2id$v=19$m=8192,t=1,p=1$broken", "$2b$12$abc"])
def test_a_hash_that_is_not_one_answers_false(passwords: Passwords, stored: str) -> None:
    assert not passwords.verify(stored, "anything at all")


def test_a_hash_of_other_parameters_needs_a_rehash_and_still_verifies(passwords: Passwords) -> None:
    older = Passwords(PasswordParams(time_cost=2, memory_kib=8192, parallelism=1))
    stored = older.hash("an older passphrase")
    assert passwords.needs_rehash(stored) and not older.needs_rehash(stored)
    assert passwords.verify(stored, "an older passphrase")
    assert not passwords.needs_rehash(passwords.hash("a new passphrase"))
