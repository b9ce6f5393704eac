"""Entry point of worker processes: ``dramatiq cardvault.workers.main`` (or ``cardvault worker``).

Reads the settings, binds the database and declares every actor on the Redis broker."""

from cardvault import heap, logs
from cardvault.adapters import metrics, speech, tracing
from cardvault.domain.db import Database
from cardvault.settings import Settings
from cardvault.workers import actors  # noqa: F401  (declares every actor)
from cardvault.workers import broker as _broker
from cardvault.workers.sweeper import Sweeper

logs.configure()  # each worker process: JSON lines off a terminal, secrets redacted
_settings = Settings.from_env()
if _settings.speech and speech.installed():
    try:
        speech.check()  # the model files are the pinned ones, or the worker does not start
    except speech.SpeechUnavailable as exc:
        raise SystemExit(f"cardvault: {exc}") from None
tracing.configure(_settings, "cardvault-worker")
_database = Database.from_url(_settings.database_url)
tracing.instrument_engine(_database.engine)
_broker.bind(_settings, _database)
_broker.broker.add_middleware(Sweeper())
if _settings.worker_metrics_port is not None:  # the first worker process to bind it answers for all
    metrics.serve(
        _settings.worker_metrics_host,
        _settings.worker_metrics_port,
        metrics.Queues(_broker.queues),
        token=_settings.metrics_token,
    )
heap.settle()  # once every actor is declared and bound (cardvault.heap)
