"""API keys of an account: created with the scopes asked and no more than the creator holds,
listed newest first, revoked; another account's key, or a revoked one, answers as a missing one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cardvault.domain.auth import keys
from cardvault.domain.db import Database
from cardvault.domain.errors import InsufficientScope, InvalidInput, KeyLimitReached, NotFound


def _create(database: Database, account_id: str, **options: str) -> tuple[str, str]:
    with database.transaction() as session:
        row, key = keys.create_key(session, account_id=account_id, **options)
        return row.id, key


def _holder(database: Database, key: str) -> keys.KeyHolder | None:
    with database.transaction(write=False) as session:
        return keys.key_holder(session, key=key)


def test_a_key_acts_for_its_account_with_the_scopes_asked(database: Database, account_id: str) -> None:
    key_id, key = _create(database, account_id, name="  CI  ", scopes="keys read")
    holder = _holder(database, key)
    assert holder == keys.KeyHolder(
        key_id=key_id, account_id=account_id, scopes=("read", "keys"), last_used_at=None, grant_id=None
    )
    with database.transaction(write=False) as session:
        (listed,) = keys.list_keys(session, account_id=account_id)
    assert (listed.name, listed.last_chars, listed.scopes) == ("CI", key[-4:], "read keys")


def test_a_key_needs_a_scope_it_knows(database: Database, account_id: str) -> None:
    with pytest.raises(InvalidInput), database.transaction() as session:
        keys.create_key(session, account_id=account_id, scopes="admin")


def test_a_key_never_holds_more_than_its_creator(database: Database, account_id: str) -> None:
    with pytest.raises(InsufficientScope) as caught, database.transaction() as session:
        keys.create_key(session, account_id=account_id, scopes="read keys", held="write read")
    assert caught.value.details == {"scope": "keys", "heldScopes": ["read", "write"]}
    keys.check_grantable("read", held="read write")  # within what it holds: no error


def test_the_101st_live_key_is_refused_until_one_is_revoked(
    database: Database, new_account: Callable[[], str]
) -> None:
    account_id = new_account()
    with database.transaction() as session:
        first = keys.create_key(session, account_id=account_id)[0].id
        for _ in range(keys.MAX_LIVE_KEYS - 1):
            keys.create_key(session, account_id=account_id)
    with pytest.raises(KeyLimitReached) as caught, database.transaction() as session:
        keys.create_key(session, account_id=account_id)
    assert caught.value.details == {"limit": 100}
    with database.transaction() as session:
        keys.revoke_key(session, account_id=account_id, key_id=first)
        keys.create_key(session, account_id=account_id)
    _create(database, new_account())  # another account counts apart


def test_keys_are_listed_newest_first_without_revoked_ones(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        made = [keys.create_key(session, account_id=account_id, name=f"k{n}")[0] for n in range(3)]
        for n, row in enumerate(made):
            row.created_at = 1_000 + n
        keys.revoke_key(session, account_id=account_id, key_id=made[1].id)
    with database.transaction(write=False) as session:
        assert [k.name for k in keys.list_keys(session, account_id=account_id)] == ["k2", "k0"]


def test_a_revoked_key_acts_for_no_one_and_cannot_be_revoked_again(
    database: Database, account_id: str
) -> None:
    key_id, key = _create(database, account_id)
    with database.transaction() as session:
        revoked = keys.revoke_key(session, account_id=account_id, key_id=key_id)
    assert revoked.revoked_at is not None
    assert _holder(database, key) is None
    with database.transaction(write=False) as session:
        assert keys.account_for_key(session, key=key) is None
    with pytest.raises(NotFound) as again, database.transaction() as session:
        keys.revoke_key(session, account_id=account_id, key_id=key_id)
    assert again.value.message == "No such API key."


def test_another_accounts_key_answers_as_a_missing_one(
    database: Database, new_account: Callable[[], str]
) -> None:
    owner, other = new_account(), new_account()
    key_id, key = _create(database, owner)
    with pytest.raises(NotFound) as theirs, database.transaction() as session:
        keys.revoke_key(session, account_id=other, key_id=key_id)
    with pytest.raises(NotFound) as missing, database.transaction() as session:
        keys.revoke_key(session, account_id=other, key_id="key_missing")
    assert (theirs.value.message, theirs.value.details) == (missing.value.message, missing.value.details)
    assert _holder(database, key) is not None  # still the owner's, still live
    with database.transaction(write=False) as session:
        assert keys.list_keys(session, account_id=other) == []


def test_last_use_is_recorded_at_most_once_a_step(database: Database, account_id: str) -> None:
    key_id, key = _create(database, account_id)
    step = keys.LAST_USED_STEP_MS
    for now, expected in [(10 * step, 10 * step), (11 * step - 1, 10 * step), (11 * step, 11 * step)]:
        with database.transaction() as session:
            keys.record_use(session, key_id=key_id, now=now)
        holder = _holder(database, key)
        assert holder is not None and holder.last_used_at == expected


def test_a_last_use_is_stale_a_step_after_it() -> None:
    holder = keys.KeyHolder("key_1", "acc_1", ("read",), last_used_at=None, grant_id=None)
    assert keys.is_last_use_stale(holder, 0)
    used = keys.KeyHolder("key_1", "acc_1", ("read",), last_used_at=1_000, grant_id=None)
    assert not keys.is_last_use_stale(used, 1_000 + keys.LAST_USED_STEP_MS - 1)
    assert keys.is_last_use_stale(used, 1_000 + keys.LAST_USED_STEP_MS)
