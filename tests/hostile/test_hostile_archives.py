"""Hostile export archives imported over the API (``format: cardvault``): a small archive that
names one stored file from many cards, or the archive's own documents as a card's file, is
refused whole; one whose files inflate past the account's quota stores nothing past it."""

from __future__ import annotations

from pathlib import Path

from cardvault.domain.db import Database
from tests.conftest import Api
from tests.unit.handlers.test_imports import imported
from tests.unit.workers.test_restores import BIG, QUOTA, _big_note, _count, _deflated, _on_disk, quota_api

__all__ = ["quota_api"]  # the fixture, used by name


def test_one_file_named_by_a_thousand_cards_is_refused_whole(
    quota_api: Api, database: Database, tmp_path: Path
) -> None:
    shared = "files/crd_1/big.txt"
    data = _deflated(tmp_path, [_big_note(n, shared) for n in range(1, 1001)], {shared: b"a" * BIG})
    job = imported(quota_api, data, format="cardvault")
    assert job["status"] == "failed" and "belongs to one card" in job["error"], job
    assert _count(database, quota_api.account_id) == 0 and _on_disk(tmp_path, quota_api.account_id) == 0


def test_a_card_naming_the_archives_own_list_of_cards_as_its_file_is_refused_whole(
    quota_api: Api, database: Database, tmp_path: Path
) -> None:
    job = imported(quota_api, _deflated(tmp_path, [_big_note(1, "cards.json")], {}), format="cardvault")
    assert job["status"] == "failed" and "cards.json" in job["error"], job
    assert _count(database, quota_api.account_id) == 0


def test_files_inflating_past_the_quota_store_nothing_past_it(
    quota_api: Api, database: Database, tmp_path: Path
) -> None:
    files = {f"files/crd_{n}/big.txt": b"a" * BIG for n in range(1, 21)}
    data = _deflated(tmp_path, [_big_note(n, f"files/crd_{n}/big.txt") for n in range(1, 21)], files)
    job = imported(quota_api, data, format="cardvault")
    assert (job["status"], job["created"], job["failed"]) == ("completed", 3, 17), job
    assert _on_disk(tmp_path, quota_api.account_id) <= QUOTA
