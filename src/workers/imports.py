"""The actor that runs imports: it reads the job's file from the blob store as a stream, skips
the entries earlier runs took (the job's ``position``), and takes the rest a batch per
transaction (cardvault.domain.portability.imports.jobs), handing over to a fresh message (and
its lease) after each time slice. Memory holds one batch, whatever the file's size.

One run works on a job at a time: a run holds the job's lease while its heartbeat is fresh (a
batch taken, or a beat while it skips), and a message for a job another run holds is dropped;
the sweeper sends a job again once its heartbeat is stale."""

from __future__ import annotations

import itertools
import time

from cardvault.domain.clock import now_ms
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.imports.entries import Budget
from cardvault.domain.portability.imports.formats.known import RESTORED, reader
from cardvault.domain.portability.imports.jobs import DAY_MS
from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.workers import restores, sliced
from cardvault.workers.broker import actor
from cardvault.workers.pipeline import send_turns

# Of batches taken; then hand over to a fresh message, well inside the time limit (600 s). Each
# slice reads the file again up to its position, so slices are long: the skips of a 256 MiB
# file's run (a million and more entries) stay a few percent of it, where 20 s slices made them
# most of it.
SLICE_SECONDS = 240.0
BEAT_SECONDS = 5.0  # while skipping what earlier runs took
HEAD_BYTES = 4096


fail_import = sliced.giving_up(
    actor_name="fail_import",
    queue_name="imports",
    noun="import",
    fail=lambda session, import_id, error: import_jobs.fail(session, import_id=import_id, error=error),
)


@actor(
    actor_name="run_import",
    queue_name="imports",
    time_limit=600_000,
    on_retry_exhausted=fail_import.actor_name,
    **sliced.RETRIED,
)
def run_import(services: Services, import_id: str, handed: str | None = None) -> None:
    """Take batches of the import's entries until the file ends or the time slice is used;
    ``handed`` is the lease of the run before, which ended its slice."""
    db, store = services.database, services.blobs
    lease, stale_ms = sliced.new_lease(), sliced.stale_ms(services)
    with db.transaction() as session:
        job = import_jobs.claim(session, import_id=import_id, lease=lease, handed=handed, stale_ms=stale_ms)
        if job is None:
            return
        position, file_format, key, account_id = job.position, job.format, job.object_key, job.account_id
    if key is None:
        return
    if store.stat(key) is None:  # deleted behind the job's back: nothing can be taken
        with db.transaction() as session:
            import_jobs.fail(session, import_id=import_id, error="The import's file is gone from storage.")
        return
    if file_format == RESTORED:  # our own archive: a card at a time, files and all
        if restores.restore_slice(
            services,
            import_id=import_id,
            lease=lease,
            position=position,
            key=key,
            max_cards=services.settings.max_cards,
        ):
            run_import.send(import_id, lease)
        return
    head = store.read(key, HEAD_BYTES)
    items = reader(file_format, head)(lambda: store.stream(key))
    beat_at = time.monotonic() + BEAT_SECONDS
    for _ in itertools.islice(items, position):  # what earlier runs took
        if time.monotonic() > beat_at:
            beat_at = time.monotonic() + BEAT_SECONDS
            with db.transaction() as session:
                if not import_jobs.beat(session, import_id=import_id, lease=lease):
                    return

    def take() -> bool:
        nonlocal position
        batch = list(itertools.islice(items, import_jobs.BATCH_SIZE))
        with db.transaction() as session:
            taken = import_jobs.take(
                session,
                import_id=import_id,
                lease=lease,
                start=position,
                items=batch,
                last=len(batch) < import_jobs.BATCH_SIZE,
                budget=budget(services.settings),
            )
        if taken.stages:  # they wait for the account's turns (cardvault.domain.portability.imports.turns)
            send_turns(services, account_id)
        position += len(batch)
        return taken.going_on

    sliced.run_slice(take, seconds=SLICE_SECONDS, hand_over=lambda: run_import.send(import_id, lease))


def budget(configured: Settings) -> Budget:
    """The account's budgets an import is held to, as configured."""
    return Budget(
        entries_per_day=configured.import_entries_per_day,
        max_cards=configured.max_cards,
        max_folders=configured.max_folders,
    )


@actor(actor_name="forget_ended_imports", queue_name="housekeeping", max_retries=3, time_limit=300_000)
def forget_ended_imports(services: Services) -> None:
    """Delete, batch by batch, the imports that ended over CARDVAULT_IMPORT_DAYS ago (their
    reports and failures with them)."""
    older_than = now_ms() - int(services.settings.import_days * DAY_MS)
    while True:
        with services.database.transaction() as session:
            if import_jobs.purge_ended(session, older_than=older_than) < import_jobs.PURGE_BATCH:
                break


def resume_stale(services: Services, older_than_seconds: float) -> int:
    """Re-send every active import whose last batch is older than this; return how many."""
    return len(sliced.resend_stale(services, import_jobs.stale, run_import.send, older_than_seconds))
