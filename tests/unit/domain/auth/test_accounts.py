"""API keys: format, checksum, storage and lookup."""

import hashlib

import pytest
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from cardvault.domain.auth import accounts, credentials, keys
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.errors import Conflict, NotFound
from cardvault.domain.models import ApiKey


def test_a_key_has_the_prefix_a_random_part_and_a_checksum(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=account_id)
    assert key.startswith("cvk_") and len(key) == 40
    assert keys.is_well_formed_key(key)


def test_only_the_hash_of_a_key_is_stored(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=account_id)
    with database.transaction(write=False) as session:
        stored = session.scalars(select(ApiKey).where(ApiKey.account_id == account_id)).one()
    assert stored.secret_hash == hashlib.sha256(key.encode()).hexdigest()
    assert not any(
        key[4:][i : i + 8] in str(value) for value in vars(stored).values() for i in range(0, 30, 8)
    )


def test_a_key_finds_its_account(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=account_id)
    with database.transaction(write=False) as session:
        assert keys.account_for_key(session, key=key) == account_id


def test_a_key_with_a_wrong_checksum_is_refused_without_a_database(
    database: Database, account_id: str
) -> None:
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=account_id)
    altered = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert not keys.is_well_formed_key(altered)
    # A session that cannot reach any database still answers: no query was made.
    broken = open_database("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with broken._sessions() as session:
        assert keys.account_for_key(session, key=altered) is None
        with pytest.raises(SQLAlchemyError):
            keys.account_for_key(session, key=key)


def test_a_well_formed_but_unknown_key_is_refused(database: Database) -> None:
    secret = "A" * 30
    key = f"cvk_{secret}{credentials._checksum('cvk_', secret)}"
    assert keys.is_well_formed_key(key)
    with database.transaction(write=False) as session:
        assert keys.account_for_key(session, key=key) is None


def test_a_key_whose_hash_differs_is_refused(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        key = keys.issue_api_key(session, account_id=account_id)
    secret = key[4:16] + "Z" * 18  # shares a prefix with a real key
    forged = f"cvk_{secret}{credentials._checksum('cvk_', secret)}"
    with database.transaction(write=False) as session:
        assert keys.account_for_key(session, key=forged) is None


def test_account_names_are_unique_ignoring_case(database: Database) -> None:
    with database.transaction() as session:
        account = accounts.create_account(session, name="Ada-unique-name")
    with database.transaction() as session, pytest.raises(Conflict):
        accounts.create_account(session, name="ADA-UNIQUE-NAME")
    with database.transaction(write=False) as session:
        assert accounts.find_account(session, name_or_id="ada-unique-name").id == account.id
        assert accounts.find_account(session, name_or_id=account.id).id == account.id
        with pytest.raises(NotFound):
            accounts.find_account(session, name_or_id="nobody-here")
