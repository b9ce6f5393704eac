"""The jobs' shared shape: a slice runs batches while the job goes on, and hands over to a fresh
message once its time is used; the giving-up actor ends the job saying why."""

from __future__ import annotations

from cardvault.bootstrap import bootstrap
from cardvault.domain.db import Database
from cardvault.settings import Settings
from cardvault.workers import sliced

ENDED: list[tuple[str, str]] = []
FAIL_EXAMPLE = sliced.giving_up(
    actor_name="fail_sliced_example",
    queue_name="tags",
    noun="example",
    fail=lambda session, job_id, error: ENDED.append((job_id, error)),
)


def test_a_slice_runs_batches_until_the_job_is_done_and_hands_over_nothing() -> None:
    left, handed = [3], []

    def step() -> bool:
        left[0] -= 1
        return left[0] > 0

    sliced.run_slice(step, seconds=60.0, hand_over=lambda: handed.append("again"))
    assert (left, handed) == ([0], [])


def test_a_slice_whose_time_is_used_hands_over_after_its_batch() -> None:
    batches, handed = [], []

    def step() -> bool:
        batches.append(1)
        return True  # the job goes on for ever

    sliced.run_slice(step, seconds=0.0, hand_over=lambda: handed.append("again"))
    assert (len(batches), handed) == (1, ["again"])


def test_each_run_gets_a_lease_of_its_own() -> None:
    assert len({sliced.new_lease() for _ in range(100)}) == 100


def test_giving_up_ends_the_job_with_how_many_times_it_failed(database: Database, settings: Settings) -> None:
    bootstrap(settings, database=database)  # the giving-up actor runs on its services
    ENDED.clear()
    FAIL_EXAMPLE.fn({"args": ["job_1"]}, {"retries": 10})
    assert ENDED == [("job_1", "The example failed 10 times and was stopped.")]
