"""What the workers' metrics read (cardvault.adapters.metrics): each message an actor handled,
by outcome and time (a Dramatiq middleware on the broker), and each queue's depth and the age
of its oldest message, read from the broker when metrics are scraped."""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from typing import Any

import dramatiq
import redis
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name, xq_name

from cardvault import logs
from cardvault.adapters import metrics, tracing


class Measured(dramatiq.Middleware):
    """Count each message an actor handled (``completed``, ``retried``: raised and sent again
    by Dramatiq's retries, ``failed``: raised with its retries used up, ``skipped``) and time
    it; name it on the thread's log lines; trace it (cardvault.adapters.tracing) as a child of
    the span that sent it, whose context the message carries in its ``trace`` option."""

    def __init__(self) -> None:
        # A message's hooks before and after it run on its worker's thread: what they share is
        # kept per thread (an id redelivered to another thread while running has its own).
        self._running = threading.local()

    def before_enqueue(self, broker: dramatiq.Broker, message: dramatiq.Message[Any], delay: int) -> None:
        carrier = tracing.inject()
        if carrier:
            message.options["trace"] = carrier
        # When it may run (a delayed one is enqueued again when due, then stamped anew): how long
        # a message has waited counts from here, not from its first send.
        message.options["ready_at"] = int(time.time() * 1000) + (delay or 0)

    def before_process_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        opened = tracing.begin(
            f"actor {message.actor_name}",
            message.options.get("trace"),
            **{"messaging.destination.name": message.queue_name, "messaging.message.id": message.message_id},
        )
        self._running.started, self._running.opened = time.perf_counter(), opened
        logs.enter(
            actor=message.actor_name,
            queue=message.queue_name,
            messageId=message.message_id,
            attempt=message.options.get("retries", 0) + 1,
            subject=_subject(message.args),
        )

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        outcome = "completed" if exception is None else "failed" if message.failed else "retried"
        self._count(message, outcome, exception)

    def after_skip_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        self._count(message, "skipped")

    def _count(self, message: MessageProxy, outcome: str, exception: BaseException | None = None) -> None:
        logs.leave()
        started, opened = getattr(self._running, "started", None), getattr(self._running, "opened", None)
        self._running.started = self._running.opened = None
        tracing.end(opened, exception)
        metrics.WORKER_MESSAGES.labels(message.queue_name, message.actor_name, outcome).inc()
        if started is not None:
            metrics.WORKER_DURATION.labels(message.queue_name, message.actor_name).observe(
                time.perf_counter() - started
            )


def _subject(args: tuple[Any, ...]) -> Any:
    """What a message works on, for its log lines: a stage's card (its pk), an operation's,
    export's, import's or webhook's id; a retries-exhausted actor's is the failed message's id."""
    first = args[0] if args else None
    return first.get("message_id") if isinstance(first, dict) else first


@dataclasses.dataclass(frozen=True)
class QueueState:
    """A queue's messages waiting to run (``ready``), waiting for their time and not yet taken
    by a worker (``delayed``: a worker holds those it took until they are due) and
    dead-lettered (``dead``), and since when the oldest ready one may run (epoch ms; None:
    none)."""

    queue: str
    ready: int
    delayed: int
    dead: int
    oldest_ms: int | None


def queue_states(broker: dramatiq.Broker) -> list[QueueState]:
    """The state of each queue the broker's actors use (not their delay queues: counted in)."""
    names = sorted(name for name in broker.get_declared_queues() if not name.endswith((".DQ", ".XQ")))
    if isinstance(broker, RedisBroker):
        return _redis_states(broker, names)
    if isinstance(broker, StubBroker):
        return [_memory_state(broker, name) for name in names]
    return []


def _memory_state(broker: StubBroker, name: str) -> QueueState:
    ready, delayed = broker.queues[name], broker.queues[dq_name(name)]
    oldest = list(ready.queue)[:1]  # the queue's own deque, read without taking
    sent = _ready_since(oldest[0]) if oldest else None
    return QueueState(name, ready.qsize(), delayed.qsize(), len(broker.dead_letters_by_queue[name]), sent)


def _ready_since(encoded: bytes) -> int:
    message = dramatiq.Message.decode(encoded)
    return int(message.options.get("ready_at") or message.message_timestamp)


@functools.cache
def _client(broker: RedisBroker) -> redis.Redis:
    """A client of the broker's Redis that gives up within 2 s (a scrape must not hang)."""
    settings = {
        **broker.client.connection_pool.connection_kwargs,
        "socket_timeout": 2.0,
        "socket_connect_timeout": 2.0,
    }
    return redis.Redis(**settings)


def _redis_states(broker: RedisBroker, names: list[str]) -> list[QueueState]:
    """Two round trips to Redis for every queue: the lengths, then each head's message."""
    client, space = _client(broker), broker.namespace
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.llen(f"{space}:{name}")
            pipe.llen(f"{space}:{dq_name(name)}")
            pipe.zcard(f"{space}:{xq_name(name)}")
            pipe.lindex(f"{space}:{name}", 0)
        counted = pipe.execute()
    heads = [counted[i * 4 + 3] for i in range(len(names))]
    with client.pipeline(transaction=False) as pipe:
        for name, head in zip(names, heads, strict=True):
            pipe.hget(f"{space}:{name}.msgs", head) if head is not None else pipe.echo(b"")
        bodies = pipe.execute()
    states = []
    for i, name in enumerate(names):
        body = bodies[i]
        sent = _ready_since(body) if body else None
        states.append(QueueState(name, counted[i * 4], counted[i * 4 + 1], counted[i * 4 + 2], sent))
    return states
