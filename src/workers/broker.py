"""The Dramatiq broker, built once per process when this module is imported, before any actor
is declared (Dramatiq binds actors to the broker at declaration). With CARDVAULT_REDIS_URL it is
Redis, shared by API and worker processes; without it, an in-memory broker whose worker runs
inside the API process (the embedded default).

The broker also carries the process's services to its actors: cardvault.bootstrap gives them
(``provide``), and an actor declared with ``actor`` receives them as its first argument, from
the broker it is bound to (``services_of``)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Retries

from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.workers.measured import Measured, queue_states
from cardvault.workers.wakeable import InProcessBroker

P = ParamSpec("P")
# Redis redelivers a dead worker's unacknowledged messages once its heartbeat is this old; our
# own sweeper (cardvault.workers.sweeper) re-sends stale operations as well.
log = logging.getLogger("cardvault.broker")
HEARTBEAT_TIMEOUT_MS = 15_000
MAINTENANCE_CHANCE = 50_000  # of 1,000,000 broker calls: a dead worker's messages return soon


def _build() -> dramatiq.Broker:
    url = Settings.redis_url_from_env()
    if url is None:
        stub = InProcessBroker()
        stub.add_middleware(Measured(), before=Retries)  # (its after_ hooks run after Retries')
        stub.emit_after("process_boot")
        return stub
    # RedisBroker.__init__ has no annotations (Dramatiq types its public API, not this class).
    redis_broker = RedisBroker(  # type: ignore[no-untyped-call]
        url=url, heartbeat_timeout=HEARTBEAT_TIMEOUT_MS, maintenance_chance=MAINTENANCE_CHANCE
    )
    redis_broker.add_middleware(Measured(), before=Retries)
    return redis_broker


broker = _build()
dramatiq.set_broker(broker)


class Provided(dramatiq.Middleware):
    """The services the bootstrap gave this broker's actors (the last bootstrap's)."""

    def __init__(self, services: Services) -> None:
        self.services = services


def provide(services: Services) -> None:
    """Give these services to the actors of their broker (cardvault.bootstrap does)."""
    for middleware in services.broker.middleware:
        if isinstance(middleware, Provided):
            middleware.services = services
            return
    services.broker.add_middleware(Provided(services))


def services_of(bound: dramatiq.Broker) -> Services:
    """The services given to this broker's actors; RuntimeError before any bootstrap."""
    for middleware in bound.middleware:
        if isinstance(middleware, Provided):
            return middleware.services
    raise RuntimeError("no services given to the broker's actors: run cardvault.bootstrap first")


def actor(
    **options: Any,
) -> Callable[[Callable[Concatenate[Services, P], None]], dramatiq.Actor[P, None]]:
    """Declare an actor (Dramatiq's options) whose function takes the services first: a
    message carries only the rest, and the services are the ones its broker was given."""

    def declare(fn: Callable[Concatenate[Services, P], None]) -> dramatiq.Actor[P, None]:
        @functools.wraps(fn)
        def with_services(*args: P.args, **kwargs: P.kwargs) -> None:
            fn(services_of(declared.broker), *args, **kwargs)

        declared: dramatiq.Actor[P, None] = dramatiq.actor(with_services, **options)
        return declared

    return declare


def queues() -> list[Any]:
    """The state of this broker's queues (cardvault.workers.measured.QueueState), for metrics;
    none when the broker cannot be read (the rest of a scrape is answered still)."""
    try:
        return list(queue_states(broker))
    except Exception as exc:  # Redis out of reach, or slow: said in the log, not a failed scrape
        log.warning("the queues could not be read for metrics: %s", exc)
        return []


def is_embedded() -> bool:
    """Say whether messages stay in this process (no Redis)."""
    return isinstance(broker, StubBroker)
