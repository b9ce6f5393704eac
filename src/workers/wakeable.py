"""Queues for the in-process worker that a stop can wake. Dramatiq's worker and consumer threads
wait on their queues with a timeout (the worker's ``worker_timeout``, 100 ms) and look at
whether they should stop only between waits, so a stop used to wait those out: about 0.1 s an
app, paid by every test's app. While a queue is ``released``, a get that finds it empty gives
up at once, as if its timeout had passed, and one waiting is woken to do so; items in it still
come out first, in order. Python's queue module names ``_init``, ``_qsize`` and ``_get`` as the
methods a subclass overrides."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from queue import Empty, PriorityQueue, Queue
from typing import Any

from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name


class _Releasable:
    """The behaviour both queue kinds share (mixed in before the queue class)."""

    mutex: Any
    not_empty: Any
    queue: Any

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)  # type: ignore[misc]
        self._released = False

    def _qsize(self) -> int:
        # Seen as holding an item while released, so a get does not wait; _get gives up then.
        return len(self.queue) or int(self._released)

    def _get(self) -> Any:
        if not self.queue:  # released and empty
            raise Empty
        return super()._get()  # type: ignore[misc]

    def release(self, released: bool = True) -> None:
        """Make every get that finds the queue empty give up at once (``released``), waking
        those waiting; or wait again as a queue does."""
        with self.mutex:
            self._released = released
            if released:
                self.not_empty.notify_all()


class ReleasableQueue(_Releasable, Queue[Any]):
    """A FIFO queue a stop can release (a broker queue)."""


class ReleasablePriorityQueue(_Releasable, PriorityQueue[Any]):
    """A priority queue a stop can release (a worker's work queue)."""


class InProcessBroker(StubBroker):
    """Dramatiq's in-memory broker, its queues releasable."""

    def declare_queue(self, queue_name: str) -> None:
        if queue_name in self.queues:
            return
        super().declare_queue(queue_name)
        # Made now, before any consumer can hold them: the broker's own, swapped while empty.
        self.queues[queue_name] = ReleasableQueue()
        self.queues[dq_name(queue_name)] = ReleasableQueue()

    @contextmanager
    def released(self) -> Iterator[None]:
        """Every queue of the broker released while the block runs, then waited on again."""
        queues = [q for q in self.queues.values() if isinstance(q, ReleasableQueue)]
        for queue in queues:
            queue.release()
        try:
            yield
        finally:
            for queue in queues:
                queue.release(False)
