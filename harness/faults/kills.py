"""Fault: processes killed with SIGKILL at random moments, many times: an API process (uvicorn's
parent starts another; the other keeps serving) or the worker's process that runs actors (the
worker then exits, and its supervisor starts it again, as systemd would), while clients create
link cards and start tag renames. A request whose process is killed under it loses its
connection (nothing can answer it); every other answer is a card or a passing fault, every
acknowledged card is stored once, and every card and operation under way when its worker died
is finished by the next one."""

from __future__ import annotations

import random
import time
from pathlib import Path

from harness.faults import (
    Outcome,
    Service,
    Traffic,
    cards_and_renames,
    kill,
    pipeline_env,
    service,
    settle_pipeline,
    stored_once,
)
from harness.faults.redis import RedisProcess
from harness.servers import page_server


def processes_killed(
    workdir: Path,
    database_url: str,
    *,
    kills: int = 50,
    clients: int = 3,
    pace: float = 0.02,
    seed: int = 27,
    apart: tuple[float, float] = (0.05, 0.35),
    settle_timeout: float = 300.0,
) -> Outcome:
    """Run the scenario on a fresh PostgreSQL database at ``database_url``: ``kills`` SIGKILLs,
    of an API process and of the worker's process in turn (each kind half of them, whatever
    chance does), at a random time within ``apart`` (seconds) after the last (``seed``). The
    settling is a wait, not a bound: 25 worker restarts leave a backlog of link stages (about
    2,300, each worker killed soon after its boot), so it waits ``settle_timeout`` for them.
    Alone beside one busy core (load 6-12) they settled in 81-117 s once the sweeper sent
    again only the stages whose message was lost (179 s before, at load 10, when it sent
    every queued one again each stale time: 35,346 messages for 2,668 stages)."""
    outcome = Outcome(f"SIGKILL of an API or worker process, {kills} times (link cards, tag renames)")
    chance = random.Random(seed)  # noqa: S311 - picks a victim and a moment, not a secret
    broker = RedisProcess(workdir)
    broker.start()
    try:
        with page_server() as pages:
            env = pipeline_env(workdir, database_url, broker.url, pages, stale_seconds=3)
            with service(env, workdir) as (running, key):
                operations: list[str] = []
                request = cards_and_renames(pages, operations, rename_every=5)
                traffic = Traffic(
                    outcome, running.base, key, request, clients=clients, pace=pace, dropped_ok=True,
                    expected=frozenset({"TAG_OPERATION_RUNNING"}),
                )  # fmt: skip
                killed = {"api": 0, "worker": 0}
                with traffic:
                    # A tag operation is under way before the first kill: on a loaded machine the
                    # renames could otherwise all meet a kill or a running one, and the scenario
                    # would not kill a worker holding an operation.
                    deadline = time.monotonic() + 30
                    while not operations and time.monotonic() < deadline:
                        time.sleep(0.05)
                    for turn in range(kills):
                        time.sleep(chance.uniform(*apart))  # a random moment, not a wait for a result
                        kind = ("api", "worker")[turn % 2]
                        victims = _victims(running, kind)
                        if victims:
                            kill(chance.choice(victims))
                            killed[kind] += 1
                    traffic.fault_over()
                    traffic.wait_for_recovery()
                outcome.unsettled += settle_pipeline(
                    outcome, running.base, key, operations, timeout=settle_timeout
                )
                outcome.facts = {"api_killed": killed["api"], "worker_killed": killed["worker"]}
    finally:
        broker.kill()
    outcome.lost = stored_once(database_url, outcome.acknowledged)
    return outcome


def _victims(running: Service, kind: str, wait: float = 60.0) -> list[int]:
    """The processes of that kind, once there are some (and, for an API process, once the API
    answers: killing the last one while the other boots would only make clients wait): a
    process killed a moment ago may not be back yet (the worker's supervisor starts it again),
    and its turn waits for it rather than passing to the other kind. Empty if none came back
    within ``wait`` (seconds): the victims counted then fall short of what the test asks."""
    deadline = time.monotonic() + wait
    while True:
        victims = running.worker_children() if kind == "worker" else running.api_children()
        if (victims and (kind == "worker" or running.healthy())) or time.monotonic() > deadline:
            return list(victims)
        time.sleep(0.05)
