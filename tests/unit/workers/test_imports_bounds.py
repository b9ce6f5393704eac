"""Imports within bounds (issue 42 #8): one account's backlog of imported stages never stands in
front of another account's first stage (each account's turns, cardvault.domain.portability.
imports.turns); an import past the account's budgets (entries a day, cards held, folders) stops
and says where and why, as a restore of our own archive does past the cards held; ended imports
are purged after CARDVAULT_IMPORT_DAYS."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import func, select, update

from cardvault.bootstrap import bootstrap
from cardvault.domain.db import Database
from cardvault.domain.models import Account, Card, CardStage, Folder, ImportJob
from cardvault.domain.pipeline import table
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.imports.turns import TURNS_PER_ACCOUNT
from cardvault.settings import Settings
from cardvault.workers import broker, imports
from cardvault.workers.imports import run_import
from tests.conftest import app_env
from tests.unit.handlers.cli.test_restore import _card, make_archive


def _bind(tmp_path: Path, database: Database, **env: str) -> None:
    bootstrap(Settings.from_env({**app_env(tmp_path, database), **env}), database=database)
    broker.broker.flush_all()


def _pocket(entries: int, tag: str) -> bytes:
    return b"title,url,time_added,tags,status\n" + b"".join(
        b"T,https://%s.example/%d,1,,unread\n" % (tag.encode(), n) for n in range(entries)
    )


def _raindrop(entries: int) -> bytes:
    """Each entry in a folder of its own."""
    return b"id,title,url,folder,created\n" + b"".join(
        b"%d,T,https://folders.example/%d,Shelf %d,2024-01-01T00:00:00Z\n" % (n, n, n) for n in range(entries)
    )


def _job(database: Database, account_id: str, data: bytes, file_format: str = "pocket") -> str:
    """A pending job over ``data``, stored where an import keeps its file, no message sent."""
    import_id = import_jobs.new_import_id()
    key = f"accounts/{account_id}/imports/{import_id}/export"
    broker.services_of(broker.broker).blobs.put(key, data, content_type="text/csv")
    with database.transaction() as session:
        session.add(
            import_jobs.new_job(
                import_id=import_id,
                account_id=account_id,
                file_format=file_format,
                on_duplicate="create",
                file_name="export.csv",
                file_size=len(data),
                object_key=key,
            )
        )
    return import_id


def _job_row(database: Database, import_id: str) -> ImportJob:
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, import_id)
        assert job is not None
        session.expunge(job)
        return job


def _owners(database: Database, account_ids: list[str]) -> dict[int, str]:
    with database.transaction(write=False) as session:
        rows = session.execute(select(Card.pk, Card.account_id).where(Card.account_id.in_(account_ids)))
        return {pk: account for pk, account in rows}


def _waiting(database: Database, account_id: str) -> int:
    with database.transaction(write=False) as session:
        query = select(func.count()).where(
            CardStage.turn_account_id == account_id, CardStage.turn_at.is_(None)
        )
        return int(session.scalar(query.select_from(CardStage)) or 0)


def test_one_accounts_backlog_never_stands_in_front_of_another_accounts_first_stage(
    tmp_path: Path, database: Database, new_account: Callable[[], str]
) -> None:
    _bind(tmp_path, database)
    first, second = new_account(), new_account()
    run_import.fn(_job(database, first, _pocket(300, "first")))  # 300 cards' stages
    run_import.fn(_job(database, second, _pocket(1, "second")))  # one card, imported after
    owners = _owners(database, [first, second])
    queue = broker.broker.queues[table.IMPORTED_QUEUE]  # type: ignore[attr-defined]
    ran: list[str] = []
    # The imported queue's messages, run in its order (each run sends its account's next turn):
    # the second account's first stage comes after a few of the first's, not after its 300.
    while queue.qsize():
        message = json.loads(queue.get_nowait())
        card_pk = message["args"][0]
        if card_pk not in owners:
            continue
        ran.append(owners[card_pk])
        if owners[card_pk] == second:
            break
        broker.broker.get_actor(message["actor_name"]).fn(*message["args"])
    assert ran[-1] == second, ran
    position = ran.index(second)
    print(f"the second account's first stage ran after {position} of the first account's")
    assert position <= TURNS_PER_ACCOUNT
    assert _waiting(database, first) >= 300 - 2 * TURNS_PER_ACCOUNT  # its backlog waits in the table
    broker.broker.flush_all()


def test_an_import_past_the_entries_a_day_stops_there_and_says_so(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    _bind(tmp_path, database, CARDVAULT_IMPORT_ENTRIES_PER_DAY="250")
    first = _job(database, account_id, _pocket(220, "day"))
    run_import.fn(first)
    assert _job_row(database, first).status == "completed"
    second = _job(database, account_id, _pocket(220, "later"))
    run_import.fn(second)  # 30 entries left for today
    job = _job_row(database, second)
    assert (job.status, job.created, job.failed) == ("failed", 30, 1)
    assert job.failures[-1]["entry"] == "line 32"  # the header is line 1
    assert "250 entries a day" in job.failures[-1]["reason"]
    assert job.error is not None and job.error.startswith("Stopped at line 32: it was not taken")
    assert job.object_key is None  # ended: its file is deleted, no run is sent again
    broker.broker.flush_all()


def test_an_import_stops_at_the_cards_an_account_may_hold_and_folders_past_theirs_are_not_made(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    _bind(tmp_path, database, CARDVAULT_MAX_CARDS="250", CARDVAULT_MAX_FOLDERS="5")
    with database.transaction() as session:  # it holds 30 cards already
        session.execute(update(Account).where(Account.id == account_id).values(cards_held=30))
    import_id = _job(database, account_id, _raindrop(300), "raindrop")
    run_import.fn(import_id)
    job = _job_row(database, import_id)
    assert (job.status, job.created, job.failed) == ("failed", 220, 1)
    assert "CARD_LIMIT_REACHED" in job.failures[-1]["reason"]
    assert job.unmapped["folder (the account's folder limit)"] == 215
    with database.transaction(write=False) as session:
        account = session.get(Account, account_id)
        assert account is not None and account.cards_held == 250
        folders = session.scalar(
            select(func.count()).select_from(Folder).where(Folder.account_id == account_id)
        )
        assert folders == 5
    broker.broker.flush_all()


def test_a_restore_stops_at_the_cards_an_account_may_hold_as_an_import_does(
    tmp_path: Path, database: Database, account_id: str
) -> None:
    _bind(tmp_path, database, CARDVAULT_MAX_CARDS="250")
    with database.transaction() as session:  # room for two more
        session.execute(update(Account).where(Account.id == account_id).values(cards_held=248))
    data = make_archive(tmp_path / "export.zip", [_card(n) for n in range(1, 6)]).read_bytes()
    import_id = _job(database, account_id, data, "cardvault")
    run_import.fn(import_id)
    job = _job_row(database, import_id)
    assert (job.status, job.found, job.created, job.failed) == ("failed", 5, 2, 1)
    assert job.failures[-1]["entry"] == "card crd_3" and "CARD_LIMIT_REACHED" in job.failures[-1]["reason"]
    assert job.error is not None and job.error.startswith("Stopped at card crd_3: it was not restored")
    assert job.object_key is None  # ended: no run is sent again for the rest
    with database.transaction(write=False) as session:
        account = session.get(Account, account_id)
        assert account is not None and account.cards_held == 250
        made = session.scalar(select(func.count()).select_from(Card).where(Card.account_id == account_id))
    print(f"restored {made} of 5 cards with room for 2")
    assert made == 2
    broker.broker.flush_all()


def test_ended_imports_are_purged_after_their_days_and_the_others_kept(
    tmp_path: Path, database: Database, new_account: Callable[[], str]
) -> None:
    _bind(tmp_path, database, CARDVAULT_IMPORT_DAYS="30")
    account, running = new_account(), new_account()
    old, recent = _job(database, account, b""), None
    with database.transaction() as session:
        import_jobs.cancel_import(session, account_id=account, import_id=old)
    recent = _job(database, account, b"")
    with database.transaction() as session:
        import_jobs.cancel_import(session, account_id=account, import_id=recent)
        import_jobs.fail(session, import_id=recent, error="x")
    active = _job(database, running, b"")
    day = 24 * 3600 * 1000
    with database.transaction() as session:  # the old one ended 31 days ago, the active one started then
        session.execute(
            update(ImportJob)
            .where(ImportJob.id == old)
            .values(completed_at=ImportJob.completed_at - 31 * day)
        )
        session.execute(
            update(ImportJob).where(ImportJob.id == active).values(created_at=ImportJob.created_at - 31 * day)
        )
    imports.forget_ended_imports.fn()
    with database.transaction(write=False) as session:
        kept = set(session.scalars(select(ImportJob.id).where(ImportJob.id.in_([old, recent, active]))))
    print(f"kept after the purge: {len(kept)} of 3")
    assert kept == {recent, active}
