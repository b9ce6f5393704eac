"""Idempotency-Keys in the database: a first request that commits between another's claim and
its record is replayed, never done twice."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import ServiceBusy
from cardvault.domain.guards import idempotency
from cardvault.domain.guards.idempotency import StoredResponse

FIRST = StoredResponse(status=201, body=b'{"id":"fld_1"}', headers={"Location": "/v1/folders/fld_1"})


def test_a_first_request_that_commits_after_the_claim_makes_the_record_fail_then_replay(
    database: Database, account_id: str
) -> None:
    if database.dialect != "postgresql":
        pytest.skip("SQLite runs one writer at a time: no first request can commit in between")
    with pytest.raises(ServiceBusy), database.transaction() as session:
        assert idempotency.claim(session, account_id=account_id, key="k", fingerprint="f") is None
        with database.transaction() as other:  # another process, whose claim came first
            idempotency.record(other, account_id=account_id, key="k", fingerprint="f", response=FIRST)
        idempotency.record(
            session, account_id=account_id, key="k", fingerprint="f", response=StoredResponse(201, b"{}", {})
        )
    with database.transaction() as session:  # run again, the request replays the first
        assert idempotency.claim(session, account_id=account_id, key="k", fingerprint="f") == FIRST


def test_an_expired_key_is_replaced_by_the_next_response(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        idempotency.record(session, account_id=account_id, key="old", fingerprint="f", response=FIRST)
        session.execute(
            text("UPDATE idempotency_keys SET created_at = :t WHERE account_id = :a"),
            {"t": now_ms() - idempotency.KEEP_MS - 1, "a": account_id},
        )
    with database.transaction() as session:
        assert idempotency.claim(session, account_id=account_id, key="old", fingerprint="other") is None
        idempotency.record(session, account_id=account_id, key="old", fingerprint="other", response=FIRST)
    with database.transaction() as session:
        assert idempotency.claim(session, account_id=account_id, key="old", fingerprint="other") == FIRST
