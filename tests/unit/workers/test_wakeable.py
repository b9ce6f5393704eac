"""Releasable queues: a get waiting on an empty queue gives up when the queue is released, items
still come out first, and a queue waited on again blocks as before; the in-process broker's
queues are all releasable."""

from __future__ import annotations

import threading
from queue import Empty
from typing import Any

import pytest

from cardvault.workers import broker
from cardvault.workers.wakeable import InProcessBroker, ReleasablePriorityQueue, ReleasableQueue


def _waiting_get(queue: Any) -> tuple[threading.Thread, list[object]]:
    """A thread blocked in ``queue.get(timeout=60)``; what it got (or Empty) lands in the list."""
    got: list[object] = []
    started = threading.Event()

    def run() -> None:
        started.set()
        try:
            got.append(queue.get(timeout=60))
        except Empty:
            got.append(Empty)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait()
    return thread, got


@pytest.mark.parametrize("kind", [ReleasableQueue, ReleasablePriorityQueue])
def test_a_waiting_get_gives_up_when_the_queue_is_released(kind: type) -> None:
    queue = kind()
    thread, got = _waiting_get(queue)
    queue.release()
    thread.join(10)  # far less than the get's own 60 s
    assert not thread.is_alive() and got == [Empty]


@pytest.mark.parametrize("kind", [ReleasableQueue, ReleasablePriorityQueue])
def test_a_released_queue_gives_its_items_first_in_order(kind: type) -> None:
    queue = kind()
    queue.release()
    for item in (2, 1, 3):
        queue.put(item)
    order = [1, 2, 3] if kind is ReleasablePriorityQueue else [2, 1, 3]
    assert [queue.get(timeout=60) for _ in range(3)] == order
    with pytest.raises(Empty):
        queue.get(timeout=60)  # at once
    with pytest.raises(Empty):
        queue.get_nowait()


def test_a_queue_waited_on_again_hands_over_what_is_put() -> None:
    queue = ReleasableQueue()
    queue.release()
    queue.release(False)
    assert queue.qsize() == 0 and queue.empty()
    thread, got = _waiting_get(queue)
    queue.put("message")
    thread.join(10)
    assert got == ["message"]


def test_the_in_process_broker_releases_every_queue_for_a_block_only() -> None:
    stub = InProcessBroker()
    stub.declare_queue("links")
    assert set(stub.queues) == {"links", "links.DQ"}
    assert all(isinstance(queue, ReleasableQueue) for queue in stub.queues.values())
    thread, got = _waiting_get(stub.queues["links.DQ"])
    with stub.released():
        thread.join(10)
        assert got == [Empty]
    thread, got = _waiting_get(stub.queues["links"])
    stub.queues["links"].put(b"after")
    thread.join(10)
    assert got == [b"after"]


def test_the_embedded_broker_is_the_in_process_one() -> None:
    if not broker.is_embedded():
        pytest.skip("CARDVAULT_REDIS_URL is set: the broker is Redis")
    assert isinstance(broker.broker, InProcessBroker)
    assert all(isinstance(queue, ReleasableQueue) for queue in broker.broker.queues.values())
