"""The embedded default's worker: Dramatiq worker threads inside the API process, started and
stopped with the app (one per process however many apps share it, as Dramatiq requires)."""

from __future__ import annotations

import threading

import dramatiq

from cardvault.workers import broker as _broker
from cardvault.workers import exports, files, idempotency, oauth, pipeline, tags, trash  # noqa: F401  (declares the actors)
from cardvault.workers.sweeper import Sweeper

_lock = threading.Lock()
_state: dict[str, object] = {"users": 0, "worker": None}


def start() -> None:
    """Start the in-process worker if this is the first app to need it."""
    with _lock:
        _state["users"] = int(_state["users"]) + 1  # type: ignore[call-overload]
        if _state["worker"] is None:
            if not any(isinstance(m, Sweeper) for m in _broker.broker.middleware):
                _broker.broker.add_middleware(Sweeper())
            worker = dramatiq.Worker(_broker.broker, worker_threads=2, worker_timeout=100)
            worker.start()
            _state["worker"] = worker


def stop() -> None:
    """Stop the in-process worker when the last app using it stops."""
    with _lock:
        _state["users"] = int(_state["users"]) - 1  # type: ignore[call-overload]
        worker = _state["worker"]
        if _state["users"] == 0 and isinstance(worker, dramatiq.Worker):
            worker.stop(timeout=10_000)
            # A stopped Worker leaves its own middleware on the broker; the next start adds another.
            _broker.broker.middleware[:] = [
                m for m in _broker.broker.middleware if getattr(m, "worker", None) is not worker
            ]
            _state["worker"] = None
