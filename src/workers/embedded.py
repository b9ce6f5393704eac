"""The embedded default's worker: Dramatiq worker threads inside the API process, started and
stopped with the app (one per process however many apps share it, as Dramatiq requires), on the
broker of the services the app was bootstrapped with."""

from __future__ import annotations

import contextlib
import threading
import time

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name

from cardvault.services import Services
from cardvault.workers import broker as _broker
from cardvault.workers.sweeper import Sweeper
from cardvault.workers.wakeable import InProcessBroker, ReleasablePriorityQueue

_lock = threading.Lock()
_state: dict[str, object] = {"users": 0, "worker": None}


def start(services: Services) -> None:
    """Start the in-process worker if this is the first app to need it."""
    broker = services.broker
    with _lock:
        _state["users"] = int(_state["users"]) + 1  # type: ignore[call-overload]
        if _state["worker"] is None:
            if not any(isinstance(m, Sweeper) for m in broker.middleware):
                broker.add_middleware(Sweeper())
            worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
            worker.work_queue = ReleasablePriorityQueue()  # before start() hands it to the threads
            worker.start()
            _state["worker"] = worker


def stop() -> None:
    """Stop the in-process worker when the last app using it stops."""
    with _lock:
        _state["users"] = int(_state["users"]) - 1  # type: ignore[call-overload]
        worker = _state["worker"]
        if _state["users"] == 0 and isinstance(worker, dramatiq.Worker):
            _stop_promptly(worker)
            # A stopped Worker leaves its own middleware on the broker; the next start adds another.
            _broker.broker.middleware[:] = [
                m for m in _broker.broker.middleware if getattr(m, "worker", None) is not worker
            ]
            _state["worker"] = None


def _stop_promptly(worker: dramatiq.Worker) -> None:
    """``worker.stop()``, its threads woken instead of waited out (cardvault.workers.wakeable):
    the worker threads first, as Dramatiq stops them (their work queue released), then, once
    they have ended, the consumers (the broker's queues released). Work in hand is finished as
    before."""
    stopper = threading.Thread(target=worker.stop, kwargs={"timeout": 10_000}, name="cardvault-stop")
    work_queue = worker.work_queue
    # The consumers' queues, released once the worker threads have ended (None: not ours).
    waiting: InProcessBroker | None = _broker.broker if isinstance(_broker.broker, InProcessBroker) else None
    with contextlib.ExitStack() as releases:
        if isinstance(work_queue, ReleasablePriorityQueue):
            work_queue.release()
        stopper.start()
        while stopper.is_alive():
            if waiting is not None and not any(thread.is_alive() for thread in worker.workers):
                releases.enter_context(waiting.released())
                waiting = None
            stopper.join(0.002)


def wait_until_idle(timeout_seconds: float = 30.0) -> None:
    """Wait until the in-process worker's sweeper has made its first pass (at boot it re-sends
    what was left running and starts the purges) and no message is queued or running; a retry
    waiting out its backoff is not waited for. Raises TimeoutError past the timeout; returns at
    once when no embedded worker runs. For callers that need the database to themselves next,
    such as a test arranging a lock."""
    worker = _state["worker"]
    broker = _broker.broker
    if not isinstance(worker, dramatiq.Worker) or not isinstance(broker, StubBroker):
        return
    deadline = time.monotonic() + timeout_seconds
    sweeper = next(m for m in broker.middleware if isinstance(m, Sweeper))
    if not sweeper.swept.wait(timeout_seconds):
        raise TimeoutError("the embedded worker's sweeper has not made its first pass")
    # Idle twice in a row, 10 ms apart: a consumer moves a message from its queue onto the
    # worker's between two looks. (A queue's count of unfinished tasks is no guide: a worker
    # stopped with messages in hand leaves them counted.)
    quiet_looks = 0
    while quiet_looks < 2:
        if time.monotonic() > deadline:
            raise TimeoutError("the embedded worker still has messages to handle")
        busy = worker.work_queue.unfinished_tasks or any(
            q.qsize() for name, q in broker.queues.items() if name != dq_name(name)
        )
        quiet_looks = 0 if busy else quiet_looks + 1
        time.sleep(0.01)
