"""The queues' state as metrics read it, from a real Redis broker (messages ready, delayed and
dead-lettered, and when the oldest ready one was sent) and from the in-memory broker; and the
middleware that counts each message an actor handled by outcome."""

from __future__ import annotations

import time
from pathlib import Path

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Retries
from prometheus_client import REGISTRY

from cardvault.workers.measured import Measured, QueueState, queue_states
from harness.servers import redis_server


def _message(queue: str, sent_ms: int) -> dramatiq.Message[object]:
    return dramatiq.Message(queue_name=queue, actor_name="noop", args=(), kwargs={}, options={}).copy(
        message_timestamp=sent_ms
    )


def test_a_redis_brokers_queues_are_read_as_they_stand(tmp_path: Path) -> None:
    with redis_server(tmp_path) as (url, _):
        broker = RedisBroker(url=url)  # type: ignore[no-untyped-call]
        broker.declare_queue("links")
        broker.declare_queue("files")
        now = int(time.time() * 1000)
        broker.enqueue(_message("links", now - 5000))  # the oldest: sent 5 s ago
        broker.enqueue(_message("links", now - 1000))
        broker.enqueue(_message("links", now), delay=60_000)
        broker.client.zadd("dramatiq:links.XQ", {"dead-one": now})
        states = {state.queue: state for state in queue_states(broker)}
        broker.close()
    assert set(states) == {"links", "files"}
    assert states["files"] == QueueState("files", 0, 0, 0, None)
    links = states["links"]
    assert (links.ready, links.delayed, links.dead, links.oldest_ms) == (2, 1, 1, now - 5000)


def test_the_in_memory_brokers_queues_are_read_without_taking_a_message() -> None:
    broker = StubBroker()
    broker.declare_queue("links")
    broker.enqueue(_message("links", 1234))
    broker.enqueue(_message("links", 5678))
    (state,) = queue_states(broker)
    assert state == QueueState("links", 2, 0, 0, 1234)
    assert broker.queues["links"].qsize() == 2
    broker.close()


def test_every_message_is_counted_by_outcome() -> None:
    broker = StubBroker()
    broker.add_middleware(Measured(), before=Retries)  # as the service adds it
    outcomes = iter([None, ValueError("passing"), ValueError("for good")])

    @dramatiq.actor(
        actor_name="measured_test_actor", queue_name="measured", broker=broker, max_retries=1, min_backoff=1
    )
    def actor() -> None:
        failure = next(outcomes)
        if failure is not None:
            raise failure

    def counted(outcome: str) -> float:
        labels = {"queue": "measured", "actor": "measured_test_actor", "outcome": outcome}
        return REGISTRY.get_sample_value("cardvault_worker_messages_total", labels) or 0.0

    before = {outcome: counted(outcome) for outcome in ("completed", "retried", "failed")}
    worker = dramatiq.Worker(broker, worker_timeout=10)
    worker.start()
    try:
        actor.send()
        actor.send()
        broker.join("measured", fail_fast=False)
        worker.join()
    finally:
        worker.stop()
        broker.close()
    grew = {outcome: counted(outcome) - before[outcome] for outcome in before}
    assert grew == {"completed": 1, "retried": 1, "failed": 1}


def test_an_actors_lines_name_its_message_and_what_it_works_on() -> None:
    import io
    import json
    import logging

    from cardvault import logs

    stream = io.StringIO()
    logger = logging.getLogger("cardvault.test.actor")
    logger.handlers[:] = [logs.handler(stream)]
    logger.propagate, logger.level = False, logging.INFO
    broker = StubBroker()
    broker.add_middleware(Measured(), before=Retries)

    @dramatiq.actor(actor_name="logging_test_actor", queue_name="logged", broker=broker)
    def actor(card_pk: int) -> None:
        logger.info("working")

    worker = dramatiq.Worker(broker, worker_timeout=10)
    worker.start()
    try:
        sent = actor.send(4242)
        broker.join("logged")
        worker.join()
    finally:
        worker.stop()
        broker.close()
    line = json.loads(stream.getvalue())
    assert (line["actor"], line["queue"], line["messageId"], line["attempt"], line["subject"]) == (
        "logging_test_actor",
        "logged",
        sent.message_id,
        1,
        4242,
    )


def test_a_message_waits_from_when_it_may_run_not_from_its_first_send() -> None:
    broker = StubBroker()
    broker.add_middleware(Measured(), before=Retries)
    broker.declare_queue("links")
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    broker.enqueue(_message("links", an_hour_ago))  # a retry, say: sent first an hour ago
    (state,) = queue_states(broker)
    assert state.ready == 1 and state.oldest_ms is not None
    assert time.time() * 1000 - state.oldest_ms < 60_000
    broker.close()
